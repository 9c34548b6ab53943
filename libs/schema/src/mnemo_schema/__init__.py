"""Mnemo's contracts: events, commands, subjects and ids. The only code services share."""
