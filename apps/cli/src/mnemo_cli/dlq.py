"""``mnemo dlq``: inspect dead letters, redrive them after a fix, or discard them.

Every stage's dead letters are in one table (see ``mnemo_runtime.deadletters``). A redrive is
carried out by the stage that owns the letter, when it is next idle; this command asks for it
and waits until the stage reports the outcome.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row
from pydantic import ValidationError

from mnemo_runtime.settings import InfraSettings
from mnemo_schema.errors import refusal
from mnemo_schema.events import decode_event


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``dlq`` subcommands."""
    sub = p.add_subparsers(dest="dlq_command", required=True)
    ls = sub.add_parser("list", help="dead letters, newest first (open ones unless --all)")
    ls.add_argument("--stage", help="only this stage (projector-pg, deriver, ...)")
    ls.add_argument("--all", action="store_true", help="redriven and discarded ones too")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    show = sub.add_parser("show", help="one dead letter, with the event it holds")
    show.add_argument("id", type=int)
    rd = sub.add_parser("redrive", help="ask the owning stage to try a dead letter again")
    rd.add_argument("id", type=int)
    rd.add_argument("--event", type=Path, help="a corrected event (JSON) to apply instead")
    rd.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the outcome")
    dc = sub.add_parser("discard", help="close a dead letter without redriving it")
    dc.add_argument("id", type=int)


def _connect(settings: InfraSettings) -> psycopg.Connection[dict[str, Any]]:
    from mnemo_cli.local import _paths

    _, pg, _ = _paths(settings.state_dir)
    return psycopg.connect(settings.database_url or pg.url(), autocommit=True, row_factory=dict_row)


def _one(conn: psycopg.Connection[dict[str, Any]], letter_id: int) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM dead_letters WHERE id = %s", (letter_id,)).fetchone()
    if row is None:
        raise SystemExit(f"no dead letter {letter_id}")
    return row


def _text(data: bytes | None) -> Any:
    if data is None:
        return None
    raw = bytes(data).decode("utf-8", "backslashreplace")
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _where(row: dict[str, Any]) -> str:
    parts = [row["workspace"] or "-"]
    if row["session_id"]:
        parts.append(f"session {row['session_id']}")
    if row["observer"]:
        parts.append(f"{row['observer']}->{row['observed']}")
    return " ".join(parts)


def list_letters(
    settings: InfraSettings, stage: str | None, everything: bool, as_json: bool
) -> None:
    """Print dead letters."""
    with _connect(settings) as conn:
        rows = conn.execute(
            "SELECT id, stage, status, stream_seq, workspace, session_id, observer, observed,"
            " attempts, reason, created_at FROM dead_letters"
            " WHERE (%s::text IS NULL OR stage = %s) AND (%s OR status IN ('open', 'redrive'))"
            " ORDER BY id DESC",
            (stage, stage, everything),
        ).fetchall()
    if as_json:
        for r in rows:
            print(json.dumps(r, default=str))
        return
    if not rows:
        print("no dead letters" if everything else "no open dead letters")
        return
    print(f"{'id':>6}  {'stage':18} {'status':9} {'seq':>8}  {'tries':>5}  where / reason")
    for r in rows:
        seq = r["stream_seq"] if r["stream_seq"] is not None else "-"
        print(
            f"{r['id']:>6}  {r['stage']:18} {r['status']:9} {seq:>8}  {r['attempts']:>5}  "
            f"{_where(r)}\n{'':53}{r['reason'][:160]}"
        )


def show_letter(settings: InfraSettings, letter_id: int) -> None:
    """Print one dead letter as JSON, its event decoded."""
    with _connect(settings) as conn:
        row = _one(conn, letter_id)
    row["data"] = _text(row["data"])
    row["fixed_data"] = _text(row["fixed_data"])
    print(json.dumps(row, default=str, indent=2))


def redrive_letter(settings: InfraSettings, letter_id: int, event: Path | None, wait: float) -> int:
    """Ask for a redrive and wait for its outcome; the exit status (0 redriven, 1 failed,
    2 no outcome in time)."""
    fixed: bytes | None = None
    if event is not None:
        fixed = event.read_bytes()
        try:
            decode_event(fixed)
        except ValidationError as err:
            print(f"{event}: not an event Mnemo can apply: {refusal(err).detail}", file=sys.stderr)
            return 1
    with _connect(settings) as conn:
        row = _one(conn, letter_id)
        if row["status"] in ("redriven", "discarded"):
            print(f"dead letter {letter_id} is already {row['status']}")
            return 0
        conn.execute(
            "UPDATE dead_letters SET status = 'redrive', fixed_data = COALESCE(%s, fixed_data),"
            " updated_at = now() WHERE id = %s",
            (fixed, letter_id),
        )
        print(f"redrive of dead letter {letter_id} ({row['stage']}) asked; waiting for it")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = _one(conn, letter_id)
            if now["status"] == "redriven":
                print(f"dead letter {letter_id} redriven")
                return 0
            if now["status"] == "open":
                print(f"the redrive failed: {now['reason']}", file=sys.stderr)
                return 1
    print(f"no outcome within {wait:.0f} s: is the {row['stage']} stage running?", file=sys.stderr)
    return 2


def discard_letter(settings: InfraSettings, letter_id: int) -> None:
    """Close a letter: replays pass over its event from now on."""
    with _connect(settings) as conn:
        _one(conn, letter_id)
        conn.execute(
            "UPDATE dead_letters SET status = 'discarded', resolved_at = now(),"
            " updated_at = now() WHERE id = %s",
            (letter_id,),
        )
    print(f"dead letter {letter_id} discarded")


def main(args: argparse.Namespace, settings: InfraSettings) -> int:
    """Run one ``dlq`` subcommand; its exit status."""
    if args.dlq_command == "list":
        list_letters(settings, args.stage, args.all, args.json)
    elif args.dlq_command == "show":
        show_letter(settings, args.id)
    elif args.dlq_command == "redrive":
        return redrive_letter(settings, args.id, args.event, args.wait)
    elif args.dlq_command == "discard":
        discard_letter(settings, args.id)
    return 0
