"""Adapters of the deriver's ports."""
