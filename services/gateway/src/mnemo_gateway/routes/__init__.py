"""Honcho v3 HTTP routes, one module per resource."""
