"""The deriver: explicit observations about each observed peer, from what each observer witnessed."""
