"""Tables of a run: Table 3 (csv, markdown), its significance tables and the markdown sections around them."""
