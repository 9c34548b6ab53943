"""``mnemo bench deriver``: the deriver's own benchmark (Coverage, Deriver Quality, Molecular)."""
