"""Readers of the benchmarks' published formats into ``Case`` objects (pure, no I/O but the read)."""

from mnemo_bench.readers.beam import read_beam, read_beam_chat
from mnemo_bench.readers.locomo import read_locomo
from mnemo_bench.readers.longmemeval import read_longmemeval

__all__ = ["read_beam", "read_beam_chat", "read_locomo", "read_longmemeval"]
