"""One card per metric: its whole record over a suite's settings (card: the data and its markdown section;
figure: ``card_<metric>.png``)."""
