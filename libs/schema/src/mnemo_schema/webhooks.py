"""Webhook endpoints: where a workspace asks to be told of its events, as facts in the log.

An endpoint is a URL a workspace registered (get-or-create by URL); its events are entity events
of the workspace, so ingest's write model knows the endpoints when it decides on a command, and
the projector keeps them in ``webhook_endpoints``. The deliveries themselves are work, not facts:
they travel on ``MNEMO_WEBHOOKS`` (see ``subjects``).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Final, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

from mnemo_schema import subjects
from mnemo_schema.envelope import Envelope

MAX_ENDPOINTS_PER_WORKSPACE: Final = 10
MAX_URL_CHARS: Final = 2048

QUEUE_EMPTY: Final = "queue.empty"
TEST_EVENT: Final = "test.event"


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https"):
        raise ValueError("must be an http or https URL")
    if not parts.hostname:
        raise ValueError("must name a host")
    if parts.username or parts.password:
        raise ValueError("must not carry credentials")
    try:
        address = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return value
    if address.is_link_local or address.is_unspecified or address.is_multicast:
        raise ValueError("must not name a link-local, unspecified or multicast address")
    return value


WebhookUrl = Annotated[
    str, Field(min_length=1, max_length=MAX_URL_CHARS), AfterValidator(_http_url)
]


class WebhookEndpointRegistered(Envelope):
    type: Literal["WebhookEndpointRegistered"] = "WebhookEndpointRegistered"
    endpoint_id: str
    url: WebhookUrl

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "webhook")


class WebhookEndpointDeleted(Envelope):
    type: Literal["WebhookEndpointDeleted"] = "WebhookEndpointDeleted"
    endpoint_id: str

    def subject(self) -> str:
        return subjects.entity_subject(self.workspace, "webhook")
