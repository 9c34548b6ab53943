"""Mnemo dialectic: answers questions about a peer, grounded in cited evidence."""
