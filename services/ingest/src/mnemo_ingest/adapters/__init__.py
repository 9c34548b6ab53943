"""Adapters of ingest's ports: JetStream log, Postgres message directory."""
