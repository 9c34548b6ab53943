"""The local Postgres ``mnemo up`` starts, wherever its state folder is."""

from __future__ import annotations

from pathlib import Path

import psycopg

from mnemo_runtime.stack import LocalPostgres, free_port


def test_postgres_starts_in_a_folder_too_deep_for_its_unix_socket(tmp_path: Path):
    # A socket's path may have 107 bytes; Mnemo connects over TCP, so a deeper folder must do.
    root = tmp_path / ("state-" + "x" * 100) / "postgres"
    server = LocalPostgres(root, free_port(), durable=False)
    url = server.start()
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
