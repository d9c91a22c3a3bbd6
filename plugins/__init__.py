"""Integrations: sinks and fault kinds, each active only when its library is importable."""
