"""free_port never hands out the same port twice in one process."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from mnemo_runtime import stack


class _Socket:
    """A socket whose kernel picks the ports of ``picks`` in turn."""

    picks: Iterator[int] = iter(())

    def __enter__(self) -> _Socket:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def bind(self, address: Any) -> None:
        self.port = next(self.picks)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def test_a_port_the_kernel_offers_again_is_not_handed_out_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stack, "_HANDED_OUT", set())
    monkeypatch.setattr(_Socket, "picks", iter([5001, 5001, 5001, 5002]))
    monkeypatch.setattr(socket, "socket", _Socket)
    assert [stack.free_port(), stack.free_port()] == [5001, 5002]


def test_free_ports_are_free_and_distinct() -> None:
    ports = [stack.free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[-1]))  # free: nothing bound it
