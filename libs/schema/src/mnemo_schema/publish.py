"""Generate the documents an agent needs to use the bus without Mnemo's code.

``python -m mnemo_schema.publish DIR`` writes JSON Schema for events, commands and replies, and an
AsyncAPI 3 document naming the channels.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mnemo_schema import subjects
from mnemo_schema.commands import COMMAND_ADAPTER, CommandReply
from mnemo_schema.events import EVENT_ADAPTER
from mnemo_schema.keys import KEY_EVENTS


def documents() -> dict[str, dict[str, Any]]:
    """File name -> document."""
    events = EVENT_ADAPTER.json_schema(ref_template="#/components/schemas/{model}")
    commands = COMMAND_ADAPTER.json_schema(ref_template="#/components/schemas/{model}")
    reply = CommandReply.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas: dict[str, Any] = {}
    for doc in (events, commands, reply):
        schemas.update(doc.pop("$defs", {}))
    schemas["Event"] = events
    schemas["Command"] = commands
    schemas["CommandReply"] = reply
    asyncapi = {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Mnemo bus",
            "version": "1",
            "description": "Commands to ingest (request-reply) and the event log (JetStream stream "
            f"{subjects.STREAM}). Publishers set Nats-Msg-Id to the event id. The stream stores "
            "each event with its workspace's partition after the workspace token "
            "(partition(N, workspace): FNV-1a of the id modulo N, the stream's partition "
            "count); the channels are given in that stored form.",
        },
        "channels": {
            "commands": {
                "address": "mnemo.cmd.{workspace}",
                "parameters": {"workspace": {"description": "workspace id"}},
                "messages": {"command": {"payload": {"$ref": "#/components/schemas/Command"}}},
            },
            "entityEvents": {
                "address": "mnemo.evt.{workspace}.{partition}.ent.{kind}",
                "parameters": {
                    "workspace": {},
                    "partition": {"description": "the workspace's partition"},
                    "kind": {"enum": ["workspace", "peer", "session", "membership"]},
                },
                "messages": {"event": {"payload": {"$ref": "#/components/schemas/Event"}}},
            },
            "messageEvents": {
                "address": "mnemo.evt.{workspace}.{partition}.msg.{session}",
                "parameters": {
                    "workspace": {},
                    "partition": {"description": "the workspace's partition"},
                    "session": {},
                },
                "messages": {"event": {"payload": {"$ref": "#/components/schemas/Event"}}},
            },
            "keyEvents": {
                "address": "mnemo.evt.~keys.{partition}.revoked",
                "parameters": {"partition": {"description": "the partition of '~keys'"}},
                "description": f"revoked bearer keys (KeyRevoked, published on {KEY_EVENTS}),"
                " outside every workspace",
                "messages": {"event": {"payload": {"$ref": "#/components/schemas/Event"}}},
            },
        },
        "operations": {
            "sendCommand": {
                "action": "send",
                "channel": {"$ref": "#/channels/commands"},
                "reply": {"messages": [{"payload": {"$ref": "#/components/schemas/CommandReply"}}]},
            },
            "receiveEvents": {"action": "receive", "channel": {"$ref": "#/channels/messageEvents"}},
        },
        "components": {"schemas": schemas},
    }
    return {
        "asyncapi.json": asyncapi,
        "events.schema.json": EVENT_ADAPTER.json_schema(),
        "commands.schema.json": COMMAND_ADAPTER.json_schema(),
        "command-reply.schema.json": CommandReply.model_json_schema(),
    }


def main(out: str) -> None:
    """Write every document under ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in documents().items():
        (folder / name).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        print(f"wrote {folder / name}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "libs/schema/published")
