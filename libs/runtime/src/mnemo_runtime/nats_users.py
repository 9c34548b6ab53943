"""The users of a local nats-server: Mnemo's service user, and one user per agent workspace.

The service user (every Mnemo process) may publish and subscribe anywhere. An agent user of
workspace W may publish only W's commands and read queries (``mnemo.cmd.W``, ``mnemo.qry.W.*``)
and subscribe only to replies under its own inbox prefix (``_INBOX.W``): nothing of another
workspace, and not the JetStream API, so it cannot read the log. Mnemo's responders reply only to
inbox subjects, so a request naming another subject as its reply gets no answer.

Passwords are random and kept, with the users, in a file only its owner may read; the server's
configuration is rendered from it (also owner-only). Users, unlike accounts, take effect on a
configuration reload, so adding an agent does not restart the server.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from mnemo_runtime.private_files import write_private
from mnemo_schema import subjects
from mnemo_schema.ids import ID_MAX_LENGTH, ID_PATTERN

SERVICE_USER = "mnemo"


@dataclass(frozen=True)
class NatsUser:
    """A user, what it may publish and subscribe to, and the inbox prefix it must use."""

    user: str
    password: str
    publish: tuple[str, ...] = (">",)
    subscribe: tuple[str, ...] = (">",)
    inbox_prefix: str | None = None

    def url(self, host: str, port: int) -> str:
        """A NATS URL carrying this user's credentials (user and password are URL-safe)."""
        return f"nats://{self.user}:{self.password}@{host}:{port}"

    def config(self) -> str:
        """This user as a nats-server ``authorization.users`` entry."""
        allow = {
            "publish": {"allow": list(self.publish)},
            "subscribe": {"allow": list(self.subscribe)},
        }
        entry = {"user": self.user, "password": self.password, "permissions": allow}
        return json.dumps(entry)  # the server's configuration format reads JSON


def agent_user_name(workspace: str) -> str:
    """The NATS user of an agent of ``workspace``."""
    return f"agent-{workspace}"


class NatsUsers:
    """The users file of one local server (created, with the service user, on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _passwords(self) -> dict[str, str]:
        """User name -> password."""
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_private(self.path, json.dumps({SERVICE_USER: secrets.token_urlsafe(24)}))
        stored: dict[str, str] = json.loads(self.path.read_text())
        return stored

    def service(self) -> NatsUser:
        """Mnemo's own user: everything."""
        return NatsUser(SERVICE_USER, self._passwords()[SERVICE_USER])

    def agent(self, workspace: str) -> tuple[NatsUser, bool]:
        """The user of ``workspace``'s agents, and whether it was made just now."""
        if not _valid_workspace(workspace):
            raise ValueError(f"not a workspace id: {workspace!r}")
        passwords = self._passwords()
        name = agent_user_name(workspace)
        made = name not in passwords
        if made:
            passwords[name] = secrets.token_urlsafe(24)
            write_private(self.path, json.dumps(passwords))
        return _agent(workspace, passwords[name]), made

    def users(self) -> list[NatsUser]:
        """Every user, the service user first."""
        passwords = self._passwords()
        out = [NatsUser(SERVICE_USER, passwords[SERVICE_USER])]
        prefix = agent_user_name("")
        for name, password in sorted(passwords.items()):
            if name.startswith(prefix):
                out.append(_agent(name[len(prefix) :], password))
        return out

    def config(self) -> str:
        """The nats-server configuration of these users."""
        entries = "\n".join(f"    {u.config()}" for u in self.users())
        return f"authorization {{\n  users: [\n{entries}\n  ]\n}}\n"


def _agent(workspace: str, password: str) -> NatsUser:
    return NatsUser(
        agent_user_name(workspace),
        password,
        subjects.agent_publish(workspace),
        subjects.agent_subscribe(workspace),
        subjects.agent_inbox_prefix(workspace),
    )


def _valid_workspace(workspace: str) -> bool:
    return len(workspace) <= ID_MAX_LENGTH and re.fullmatch(ID_PATTERN, workspace) is not None
