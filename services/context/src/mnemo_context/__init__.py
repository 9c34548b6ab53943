"""Mnemo context: token-budgeted context assembly and search (deterministic, no model)."""
