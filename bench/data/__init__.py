"""Corpus and pair cards, fetching and verifying sources, parsing them into texts."""
