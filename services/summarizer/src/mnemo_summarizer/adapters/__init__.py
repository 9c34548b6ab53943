"""Adapters of the summarizer's ports."""
