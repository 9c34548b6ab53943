"""Files that hold secrets (keys, passwords): readable by their owner only, from the start."""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` with mode 0600, replacing any earlier file at once.

    The file is created 0600 (never wider for a moment) under a temporary name and then renamed
    over ``path``, so a reader sees the old content or the new, never half of it.
    """
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(raw)
    tmp.chmod(0o600)
    tmp.replace(path)
