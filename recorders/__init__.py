"""Corpus and test tooling for leakcheck's real fault transports: not installed with it."""
