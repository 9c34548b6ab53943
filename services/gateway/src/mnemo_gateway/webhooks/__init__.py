"""Webhooks: signed notices of a workspace's events, delivered at least once to its endpoints."""
