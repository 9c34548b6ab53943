"""Mnemo summarizer: short and long session summaries on a message cadence."""
