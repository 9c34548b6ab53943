"""The representation store: observations and their provenance in Postgres, vectors in Qdrant."""
