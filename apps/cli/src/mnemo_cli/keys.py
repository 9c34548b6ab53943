"""``mnemo key``: the local admin key, keys minted with the local signing key, agents' NATS users.

``mnemo up`` makes, on first start, an Ed25519 signing key and its public key under
``$MNEMO_STATE_DIR/auth`` (or uses ``MNEMO_AUTH_KEYS_DIR``) and an admin key signed with it in
``$MNEMO_STATE_DIR/admin.key`` (mode 0600); the gateway verifies with the public key.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from mnemo_gateway.auth.keyring import SIGNING_FILE, VERIFY_FILE, Keyring, generate_keys
from mnemo_gateway.auth.settings import AuthSettings
from mnemo_gateway.webhooks.settings import SECRET_FILE
from mnemo_runtime.nats_users import NatsUser
from mnemo_runtime.private_files import write_private
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import ADMIN_KEY_FILE, local_api_key, read_pid
from mnemo_schema.errors import Refusal
from mnemo_schema.keys import KeyScope


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``mnemo key`` and its options."""
    p.add_argument("--workspace", help="mint a key for this workspace (with the local signing key)")
    p.add_argument("--peer", help="... for this peer of the workspace only")
    p.add_argument("--session", help="... for this session of the workspace only")
    p.add_argument("--expires-in", type=float, help="seconds until the minted key expires")
    p.add_argument("--nats", metavar="WORKSPACE", help="a NATS user for an agent of WORKSPACE")
    p.add_argument("--revoke", metavar="KEY_ID", help="revoke a key, through the local gateway")
    p.add_argument(
        "--new-keys",
        metavar="DIR",
        type=Path,
        help="make a signing key and its public key in DIR (for a deployment's Secret), and print"
        " an admin key signed with it",
    )


def admin_key_path(settings: InfraSettings) -> Path:
    """Where the local admin key is kept."""
    return settings.state_dir.resolve() / ADMIN_KEY_FILE


def local_keys(settings: InfraSettings) -> Path | None:
    """For ``mnemo up``: the keys folder the gateway verifies with (made on first start), and the
    admin key signed with it; None when authentication is off (MNEMO_AUTH=off)."""
    auth = AuthSettings()
    if not auth.enabled:
        print("Warning   MNEMO_AUTH=off: no key is asked for; anyone may read and write anything")
        return None
    folder = auth.keys_dir or settings.state_dir.resolve() / "auth"
    if auth.keys_dir is None:
        generate_keys(folder)
    keyring = Keyring.load(auth.model_copy(update={"keys_dir": folder}))
    path = admin_key_path(settings)
    if keyring.can_sign and not _valid(keyring, path):
        token, _ = keyring.mint(KeyScope.ADMIN)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, token + "\n")
    elif not keyring.can_sign and not path.exists():
        print(f"Warning   {folder} holds no signing key: no admin key was made")
    return folder


def local_webhook_secret(settings: InfraSettings) -> Path:
    """For ``mnemo up``: the file holding the secret webhooks are signed with (made on first
    start, owner-only; the gateway reads it when ``MNEMO_WEBHOOK_SECRET`` is not set)."""
    path = settings.state_dir.resolve() / SECRET_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, secrets.token_hex(32) + "\n")
    return path


def _valid(keyring: Keyring, path: Path) -> bool:
    if not path.exists():
        return False
    try:
        keyring.verify(path.read_text().strip())
    except Refusal:
        return False  # signed with keys since replaced
    return True


def auth_headers(settings: InfraSettings | None = None) -> dict[str, str]:
    """``Authorization`` for local tools' HTTP requests (none without a key)."""
    key = local_api_key((settings or InfraSettings()).state_dir)
    return {"Authorization": f"Bearer {key}"} if key else {}


def main(args: argparse.Namespace, settings: InfraSettings) -> int:
    """Run ``mnemo key``."""
    if args.new_keys:
        if (args.new_keys / SIGNING_FILE).exists():
            raise SystemExit(f"{args.new_keys} holds a signing key already")
        generate_keys(args.new_keys)
        keyring = Keyring.load(AuthSettings(MNEMO_AUTH="on", keys_dir=args.new_keys))
        print(keyring.mint(KeyScope.ADMIN)[0])
        print(
            f"keys in {args.new_keys}: {SIGNING_FILE} (mints), {VERIFY_FILE} (verifies)",
            file=sys.stderr,
        )
        return 0
    if args.nats:
        return _nats_user(args.nats, settings)
    if args.revoke:
        return _revoke(args.revoke, settings)
    if args.workspace:
        return _mint(args, settings)
    if args.peer or args.session or args.expires_in:
        raise SystemExit("--peer, --session and --expires-in go with --workspace")
    path = admin_key_path(settings)
    if not path.exists():
        raise SystemExit(f"no admin key in {path}: `mnemo up` makes one")
    print(path.read_text().strip())
    return 0


def _mint(args: argparse.Namespace, settings: InfraSettings) -> int:
    auth = AuthSettings()
    folder = auth.keys_dir or settings.state_dir.resolve() / "auth"
    keyring = Keyring.load(
        auth.model_copy(update={"keys_dir": folder if folder.is_dir() else None})
    )
    if not keyring.can_sign:
        raise SystemExit(f"no signing key in {folder}: `mnemo up` makes one")
    if args.peer and args.session:
        raise SystemExit("a key is for a peer or for a session, not both")
    scope = KeyScope.PEER if args.peer else KeyScope.SESSION if args.session else KeyScope.WORKSPACE
    until = datetime.now(UTC) + timedelta(seconds=args.expires_in) if args.expires_in else None
    try:
        token, claims = keyring.mint(scope, args.workspace, args.peer, args.session, until)
    except ValueError as err:  # an id that is not one
        raise SystemExit(str(err)) from err
    print(token)
    print(f"key id {claims.key_id}", file=sys.stderr)
    return 0


def _revoke(key_id: str, settings: InfraSettings) -> int:
    from mnemo_cli.local import gateway_url

    r = httpx.delete(
        f"{gateway_url()}/v3/keys/{key_id}", headers=auth_headers(settings), timeout=30
    )
    if r.status_code != 204:
        raise SystemExit(f"not revoked ({r.status_code}): {r.text}")
    print(f"revoked {key_id}")
    return 0


def _nats_user(workspace: str, settings: InfraSettings) -> int:
    from mnemo_cli.local import _paths

    nats, _, _ = _paths(settings.state_dir)
    try:
        user = nats.agent(workspace)
    except ValueError as err:
        raise SystemExit(str(err)) from err
    if settings.nats_url:
        print(
            "NATS_URL names a server that `mnemo up` does not run: add this user to its"
            " configuration (authorization.users) instead.",
            file=sys.stderr,
        )
    elif read_pid(nats.pidfile) is not None:
        asyncio.run(_wait_accepted(user, nats.port))
    print(json.dumps(_described(user, nats.port), indent=2))
    return 0


def _described(user: NatsUser, port: int) -> dict[str, object]:
    return {
        "url": user.url("127.0.0.1", port),
        "user": user.user,
        "password": user.password,
        "inbox_prefix": user.inbox_prefix,
        "permissions": {"publish": list(user.publish), "subscribe": list(user.subscribe)},
    }


async def _wait_accepted(user: NatsUser, port: int, timeout: float = 10.0) -> None:
    """Until the running server (reloading its configuration) accepts the new user."""
    import nats

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            nc = await nats.connect(
                user.url("127.0.0.1", port),
                inbox_prefix=user.inbox_prefix or "_INBOX",
                allow_reconnect=False,
                connect_timeout=2,
                max_reconnect_attempts=0,
            )
        except Exception:
            if loop.time() > deadline:
                raise SystemExit("the local NATS server does not accept the new user") from None
            await asyncio.sleep(0.1)
            continue
        await nc.close()
        return
