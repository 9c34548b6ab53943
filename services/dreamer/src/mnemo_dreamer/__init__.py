"""Mnemo dreamer: scheduled belief revision (deduction), generalisation (induction) and the peer card."""
