"""Data shipped with leakcheck: demo artifacts, benign samples, schemas."""
