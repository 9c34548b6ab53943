"""How the local reasoner names itself, and the peers it writes about."""

from __future__ import annotations

# Every answer of the local reasoner carries this model name, so that nobody mistakes its
# output for a language model's.
MODEL_NAME = "local-heuristic"


def display_name(peer_id: str) -> str:
    """How a peer is named in a fact: ids written in lower case ("caroline") get a capital."""
    return peer_id[:1].upper() + peer_id[1:] if peer_id.islower() else peer_id
