"""Ingest's decisions on webhook endpoints: get-or-create by url, the limit, delete."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from mnemo_ingest.decision import Context
from mnemo_ingest.domain import decide
from mnemo_ingest.model import WorkspaceModel
from mnemo_schema import commands as c
from mnemo_schema.errors import Refusal
from mnemo_schema.webhooks import (
    MAX_ENDPOINTS_PER_WORKSPACE,
    WebhookEndpointDeleted,
    WebhookEndpointRegistered,
)

CTX = Context(workspace="w", now=datetime(2024, 1, 1, tzinfo=UTC))


def workspace() -> WorkspaceModel:
    m = WorkspaceModel()
    decide(m, c.EnsureWorkspace(), CTX)
    return m


def register(m: WorkspaceModel, url: str) -> list[object]:
    return list(decide(m, c.RegisterWebhookEndpoint(url=url), CTX).events)


def test_registering_a_url_twice_creates_one_endpoint():
    m = workspace()
    (first,) = register(m, "https://example.com/hook")
    assert isinstance(first, WebhookEndpointRegistered)
    assert register(m, "https://example.com/hook") == []
    assert m.webhooks == {"https://example.com/hook": first.endpoint_id}


def test_a_workspace_has_at_most_the_documented_number_of_endpoints():
    m = workspace()
    for n in range(MAX_ENDPOINTS_PER_WORKSPACE):
        register(m, f"https://example.com/{n}")
    with pytest.raises(Refusal) as err:
        register(m, "https://example.com/one-too-many")
    assert err.value.status == 409 and err.value.field == "url"
    register(m, "https://example.com/0")  # an existing one is still answered


def test_delete_removes_the_endpoint_and_refuses_an_unknown_id():
    m = workspace()
    (made,) = register(m, "http://receiver.internal/hook")
    assert isinstance(made, WebhookEndpointRegistered)
    (gone,) = decide(m, c.DeleteWebhookEndpoint(endpoint_id=made.endpoint_id), CTX).events
    assert isinstance(gone, WebhookEndpointDeleted) and m.webhooks == {}
    with pytest.raises(Refusal) as err:
        decide(m, c.DeleteWebhookEndpoint(endpoint_id=made.endpoint_id), CTX)
    assert err.value.status == 404 and err.value.field == "endpoint_id"


def test_deleting_the_workspace_forgets_its_endpoints():
    m = workspace()
    register(m, "https://example.com/hook")
    decide(m, c.DeleteWorkspace(), CTX)
    assert m.webhooks == {}


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/x",
        "example.com/hook",
        "https://",
        "http://user:pw@example.com/",
        "http://169.254.169.254/latest/meta-data",
        "http://[fe80::1]/x",
        "http://0.0.0.0/",
    ],
)
def test_only_http_urls_to_ordinary_hosts_are_accepted(url):
    with pytest.raises(ValidationError) as err:
        c.RegisterWebhookEndpoint(url=url)
    assert err.value.errors()[0]["loc"] == ("url",)
