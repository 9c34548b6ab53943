"""Who may call what: one rule per operation, and the one function that applies them.

An operation is its method and route template (``("POST", "/v3/workspaces/{workspace_id}/...")``);
its ids are the values of the parameters its rule names, gathered by the transport (path
parameters by their names; ``body.<field>`` and ``query.<name>`` for the few ids a request names
elsewhere). Nothing here knows HTTP: another edge maps its calls to the same operations and ids.

- an admin key reaches every operation;
- a workspace key reaches every operation of its workspace that is not admin-only;
- a peer key reaches the operations about its peer (the rule's ``peer`` id equals it), a session
  key those about its session; both also reach the ones marked ``members`` (getting their
  workspace, as every client does first);
- an operation without a rule is refused to every key: a new route is closed until mapped.

A key that does not reach an operation gets 403, decided from the key and the ids the caller
sent, before anything is read: the answer is the same whether the thing named exists or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mnemo_gateway.auth.keyring import FIELD, Claims
from mnemo_schema.errors import Refusal
from mnemo_schema.keys import KeyScope

Operation = tuple[str, str]  # (method, route template)


@dataclass(frozen=True)
class Rule:
    """What one operation requires, and which of its parameters name its resource."""

    public: bool = False
    admin: bool = False
    workspace: str = "workspace_id"
    peer: str | None = None
    session: str | None = None
    members: bool = False

    def params(self) -> tuple[str, ...]:
        """The parameters this rule reads."""
        if self.public or self.admin:
            return ()
        return tuple(p for p in (self.workspace, self.peer, self.session) if p is not None)

    def keys(self) -> str:
        """The keys that reach it, in words (the README's table)."""
        if self.public:
            return "none needed"
        if self.admin:
            return "admin"
        where = "" if self.workspace == "workspace_id" else f" (`{self.workspace}`)"
        keys = ["admin", f"workspace{where}"]
        if self.peer:
            keys.append(f"peer (`{self.peer}`)")
        if self.session:
            keys.append(f"session (`{self.session}`)")
        if self.members:
            keys.append("any peer or session key of it")
        return ", ".join(keys)


PUBLIC = Rule(public=True)
ADMIN = Rule(admin=True)
WORKSPACE = Rule()
PEER = Rule(peer="peer_id")
SESSION = Rule(session="session_id")

_W = "/v3/workspaces/{workspace_id}"
_P = _W + "/peers/{peer_id}"
_S = _W + "/sessions/{session_id}"

RULES: dict[Operation, Rule] = {
    ("GET", "/health"): PUBLIC,
    ("GET", "/ready"): PUBLIC,
    ("GET", "/openapi.json"): PUBLIC,
    ("GET", "/docs"): PUBLIC,
    ("GET", "/docs/oauth2-redirect"): PUBLIC,
    ("GET", "/redoc"): PUBLIC,
    ("POST", "/v3/keys"): ADMIN,
    ("DELETE", "/v3/keys/{key_id}"): ADMIN,
    ("POST", "/v3/workspaces"): Rule(workspace="body.id", members=True),
    ("POST", "/v3/workspaces/list"): ADMIN,
    ("PUT", _W): WORKSPACE,
    ("DELETE", _W): WORKSPACE,
    ("GET", _W + "/queue/status"): Rule(session="query.session_id"),
    ("POST", _W + "/search"): WORKSPACE,
    ("POST", _W + "/chat"): WORKSPACE,
    ("POST", _W + "/schedule_dream"): WORKSPACE,
    ("POST", _W + "/conclusions"): WORKSPACE,
    ("POST", _W + "/conclusions/list"): WORKSPACE,
    ("POST", _W + "/conclusions/query"): WORKSPACE,
    ("GET", _W + "/conclusions/{conclusion_id}"): WORKSPACE,
    ("DELETE", _W + "/conclusions/{conclusion_id}"): WORKSPACE,
    ("POST", _W + "/webhooks"): WORKSPACE,
    ("GET", _W + "/webhooks"): WORKSPACE,
    ("DELETE", _W + "/webhooks/{endpoint_id}"): WORKSPACE,
    ("GET", _W + "/webhooks/test"): WORKSPACE,
    ("POST", _W + "/peers"): Rule(peer="body.id"),
    ("POST", _W + "/peers/list"): WORKSPACE,
    ("PUT", _P): PEER,
    ("DELETE", _P): PEER,
    ("POST", _P + "/sessions"): PEER,
    ("POST", _P + "/chat"): PEER,
    ("POST", _P + "/representation"): PEER,
    ("GET", _P + "/context"): PEER,
    ("POST", _P + "/search"): PEER,
    ("GET", _P + "/card"): PEER,
    ("PUT", _P + "/card"): PEER,
    ("POST", _W + "/sessions"): Rule(session="body.id"),
    ("POST", _W + "/sessions/list"): WORKSPACE,
    ("PUT", _S): SESSION,
    ("DELETE", _S): SESSION,
    ("POST", _S + "/clone"): SESSION,
    ("POST", _S + "/peers"): SESSION,
    ("PUT", _S + "/peers"): SESSION,
    ("DELETE", _S + "/peers"): SESSION,
    ("GET", _S + "/peers"): SESSION,
    ("GET", _S + "/peers/{peer_id}/config"): SESSION,
    ("PUT", _S + "/peers/{peer_id}/config"): SESSION,
    ("GET", _S + "/context"): SESSION,
    ("POST", _S + "/search"): SESSION,
    ("GET", _S + "/summaries"): SESSION,
    ("POST", _S + "/messages"): SESSION,
    ("POST", _S + "/messages/upload"): SESSION,
    ("POST", _S + "/messages/list"): SESSION,
    ("GET", _S + "/messages/{message_id}"): SESSION,
    ("PUT", _S + "/messages/{message_id}"): SESSION,
    ("DELETE", _S + "/messages/{message_id}"): SESSION,
    # A scope spans sessions: only the workspace's keys reach it.
    ("POST", _W + "/scopes"): WORKSPACE,
    ("POST", _W + "/scopes/list"): WORKSPACE,
    ("GET", _W + "/scopes/{scope_id}"): WORKSPACE,
    ("POST", _W + "/scopes/{scope_id}/sessions"): WORKSPACE,
    ("POST", _W + "/scopes/{scope_id}/sessions/list"): WORKSPACE,
    ("DELETE", _W + "/scopes/{scope_id}/sessions/{session_id}"): WORKSPACE,
    ("GET", _W + "/scopes/{scope_id}/status"): WORKSPACE,
}

# Public operations have fixed paths, so an edge can tell them apart before routing.
PUBLIC_PATHS: frozenset[str] = frozenset(t for (_, t), r in RULES.items() if r.public)
if any("{" in p for p in PUBLIC_PATHS):
    raise RuntimeError("a public route must not take parameters")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's scope and what it names (``scope`` None: no key needed)."""

    scope: KeyScope | None
    key_id: str | None = None
    workspace: str | None = None
    peer: str | None = None
    session: str | None = None

    @classmethod
    def of(cls, claims: Claims) -> Principal:
        return cls(claims.scope, claims.key_id, claims.workspace, claims.peer, claims.session)


ANYONE = Principal(None)


def rule_of(operation: Operation) -> Rule | None:
    """The rule of ``operation`` (HEAD is GET's), or None: no rule, refused to every key."""
    method, template = operation
    return RULES.get(("GET" if method == "HEAD" else method, template))


def _forbidden(reason: str) -> Refusal:
    return Refusal(403, f"{FIELD}: {reason}", FIELD)


def authorise(claims: Claims, operation: Operation, ids: Mapping[str, str | None]) -> Principal:
    """The principal ``claims`` acts as for ``operation`` on ``ids``, or a 403 refusal."""
    rule = rule_of(operation)
    if rule is None:
        raise _forbidden(f"no key may call {operation[0]} {operation[1]}")
    if rule.public or claims.scope is KeyScope.ADMIN:
        return Principal.of(claims)
    if rule.admin:
        raise _forbidden("this operation needs an admin key")
    if ids.get(rule.workspace) != claims.workspace:
        raise _forbidden("this key does not reach that workspace")
    if claims.scope is KeyScope.WORKSPACE or rule.members:
        return Principal.of(claims)
    named = {KeyScope.PEER: rule.peer, KeyScope.SESSION: rule.session}.get(claims.scope)
    mine = claims.peer if claims.scope is KeyScope.PEER else claims.session
    if named is not None and mine is not None and ids.get(named) == mine:
        return Principal.of(claims)
    raise _forbidden(f"this key reaches its {claims.scope.value} only")


def table() -> str:
    """Every operation and the keys that reach it, as the README's Markdown table."""
    rows = ["| method | route | keys that reach it |", "|---|---|---|"]
    for (method, template), rule in RULES.items():
        rows.append(f"| {method} | `{template}` | {rule.keys()} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
