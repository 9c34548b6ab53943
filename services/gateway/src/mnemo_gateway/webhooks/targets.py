"""Where a delivery may go: refuse link-local and cloud metadata addresses unless allowed.

The host is resolved at delivery time and every address it resolves to is checked, so that a
name registered as harmless cannot later point at an instance's metadata service.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

_METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "instance-data"})
_METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)


class UnsafeTarget(Exception):
    """The URL's host is (or resolves to) an address deliveries may not go to."""


def unsafe_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return ip.is_link_local or ip in _METADATA_ADDRESSES or ip.is_unspecified or ip.is_multicast


async def check(url: str, allow_link_local: bool) -> None:
    """Raise ``UnsafeTarget`` if ``url`` may not be delivered to."""
    if allow_link_local:
        return
    host = urlsplit(url).hostname or ""
    if host.lower().rstrip(".") in _METADATA_HOSTS:
        raise UnsafeTarget(f"{host}: a cloud metadata host")
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return  # the request fails on its own, as a network error
    for info in infos:
        address = str(info[4][0])
        if unsafe_address(address):
            raise UnsafeTarget(f"{host} resolves to {address}, a link-local or metadata address")
