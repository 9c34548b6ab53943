"""NATS credentials: the local server's users, the URL a process connects with, and what is shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo_runtime.nats_users import NatsUsers
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import local_api_key, redacted


def test_users_are_kept_owner_only_and_agents_get_their_workspace_alone(tmp_path: Path) -> None:
    users = NatsUsers(tmp_path / "nats" / "users.json")
    service = users.service()
    agent, made = users.agent("ws-1")
    assert made and users.agent("ws-1") == (agent, False)  # the same user, the same password
    assert users.service() == service
    assert (tmp_path / "nats" / "users.json").stat().st_mode & 0o777 == 0o600
    assert (service.publish, service.subscribe) == ((">",), (">",))
    assert agent.user == "agent-ws-1" and agent.inbox_prefix == "_INBOX.ws-1"
    assert agent.publish == ("mnemo.cmd.ws-1", "mnemo.qry.ws-1.*")
    assert agent.subscribe == ("_INBOX.ws-1.>",)
    assert agent.password != service.password and len(agent.password) >= 32
    with pytest.raises(ValueError, match="not a workspace id"):
        users.agent("a.b")  # a subject token would let it reach other workspaces' subjects
    # The server's configuration lists every user with exactly those permissions.
    config = users.config()
    entries = [json.loads(line) for line in config.splitlines() if line.strip().startswith("{")]
    assert [e["user"] for e in entries] == ["mnemo", "agent-ws-1"]
    assert entries[1]["permissions"] == {
        "publish": {"allow": ["mnemo.cmd.ws-1", "mnemo.qry.ws-1.*"]},
        "subscribe": {"allow": ["_INBOX.ws-1.>"]},
    }


def test_the_nats_url_takes_the_service_users_credentials_given_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NATS_URL", "nats://nats.messaging:4222")
    monkeypatch.setenv("DATABASE_URL", "postgresql://db/mnemo")
    assert InfraSettings().require_urls()[0] == "nats://nats.messaging:4222"
    monkeypatch.setenv("MNEMO_NATS_USER", "mnemo")
    monkeypatch.setenv("MNEMO_NATS_PASSWORD", "p@ss/w:rd")
    settings = InfraSettings()
    assert settings.require_urls()[0] == "nats://mnemo:p%40ss%2Fw%3Ard@nats.messaging:4222"
    assert "p@ss" not in repr(settings)  # the password is a SecretStr
    monkeypatch.setenv("NATS_URL", "nats://other:secret@nats:4222")
    assert InfraSettings().nats() == "nats://other:secret@nats:4222"  # a URL's own win


def test_urls_are_shown_without_their_password() -> None:
    assert redacted("nats://mnemo:hunter2@127.0.0.1:4222") == "nats://mnemo:***@127.0.0.1:4222"
    assert (
        redacted("postgresql://postgres@127.0.0.1:5432/db")
        == "postgresql://postgres@127.0.0.1:5432/db"
    )
    assert redacted("nats://127.0.0.1:4222") == "nats://127.0.0.1:4222"


def test_local_tools_send_the_sdk_key_or_the_local_admin_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HONCHO_API_KEY", raising=False)
    assert local_api_key(tmp_path) is None
    (tmp_path / "admin.key").write_text("admin-key\n")
    assert local_api_key(tmp_path) == "admin-key"
    monkeypatch.setenv("HONCHO_API_KEY", "sdk-key")
    assert local_api_key(tmp_path) == "sdk-key"
