"""Adapters of the dialectic's ports."""
