"""Operations ports of the local processes: one each, from MNEMO_METRICS_PORT on, or none."""

from __future__ import annotations

from mnemo_cli.local import SPLIT, metrics_ports


def test_each_local_process_gets_its_own_port_from_the_base() -> None:
    ports = metrics_ports(SPLIT, "9470")
    assert ports == {
        "api": {"MNEMO_METRICS_PORT": "9470"},
        "projector": {"MNEMO_METRICS_PORT": "9471"},
        "read": {"MNEMO_METRICS_PORT": "9472"},
        "memory": {"MNEMO_METRICS_PORT": "9473"},
    }


def test_no_port_no_operations_server() -> None:
    assert metrics_ports(SPLIT, None) == {}
    assert metrics_ports(SPLIT, "") == {}
