"""The chart's deployment, run as processes: each Deployment's container as its own process, with
exactly the arguments and environment the rendered chart gives it, driven by the official SDK.

Only what a pod's own namespace provides is substituted: each process gets its own ports
(every pod listens on 9464 and the gateway on 8000, in its own network namespace), binds to
loopback instead of 0.0.0.0, and gets its own state folder (the pod's volume). The migration
Job runs first, as Helm's pre-install hook does; each process is then waited for through its
readiness probe, as the kubelet does.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import httpx
import pytest
import yaml
from honcho import Honcho
from mnemo.v1 import messages_pb2 as mp
from mnemo.v1 import messages_pb2_grpc as mg

from mnemo_cli.bench_grpc import credentials
from mnemo_runtime.stack import free_port
from mnemo_schema import subjects

ROOT = Path(__file__).resolve().parents[2]
HELM = ROOT / "deploy" / "tools" / "bin" / "helm" / "helm"
CHART = ROOT / "deploy" / "helm" / "mnemo"

pytestmark = pytest.mark.skipif(not HELM.exists(), reason="helm is not installed (make test)")


# MNEMO_BENCH_LOAD_* sizes of the Helm test's load figures here (a comma needs escaping in --set).
_BENCH_SIZES = {
    "HISTORIES": "100\\,150",
    "BURST": "100",
    "LOAD_RATE": "100",
    "LOAD_SECONDS": "3",
    "READ_SAMPLES": "10",
    "FRESHNESS_SAMPLES": "1",
    "FAIRNESS_SAMPLES": "1",
}


def _render(*sets: str) -> list[dict[str, Any]]:
    args = [str(HELM), "template", "m", str(CHART)]
    for pair in sets:
        args += ["--set", pair]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=60).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@dataclass
class Pod:
    """One container of the rendered chart, as a process."""

    name: str
    args: list[str]
    env: dict[str, str]
    probe: tuple[str, int] | None  # readiness path and port
    proc: subprocess.Popen[bytes] | None = None


def _pods(
    docs: list[dict[str, Any]],
    secrets: dict[tuple[str, str], str],
    state: Path,
    volumes: dict[str, Path] | None = None,
) -> list[Pod]:
    """``volumes``: secret name -> the local folder holding its keys as files (its mount)."""
    configmaps = {d["metadata"]["name"]: d["data"] for d in docs if d["kind"] == "ConfigMap"}
    pods = []
    for d in docs:
        if d["kind"] not in ("Deployment", "Job"):
            continue
        (c,) = d["spec"]["template"]["spec"]["containers"]
        env: dict[str, str] = {}
        for source in c.get("envFrom", []):
            env |= configmaps[source["configMapRef"]["name"]]
        for e in c["env"]:
            if "value" in e:
                env[e["name"]] = e["value"]
            else:
                ref = e["valueFrom"]["secretKeyRef"]
                value = secrets.get((ref["name"], ref["key"]))
                if value is None:
                    assert ref.get("optional"), f"no test secret for {ref}"
                    continue
                env[e["name"]] = value
        # What the pod's own network namespace and volumes give it: a Secret's volume is its
        # folder here, wherever the pod mounts it.
        mounted = {
            v["name"]: (volumes or {})[v["secret"]["secretName"]]
            for v in d["spec"]["template"]["spec"].get("volumes", [])
            if "secret" in v
        }
        for m in c.get("volumeMounts", []):
            if m["name"] in mounted:
                env = {
                    k: str(mounted[m["name"]]) if v == m["mountPath"] else v for k, v in env.items()
                }
        ports = {p["name"]: free_port() for p in c.get("ports", [])}
        if "metrics" in ports:
            env["MNEMO_METRICS_PORT"] = str(ports["metrics"])
        if "http" in ports:
            env["MNEMO_GATEWAY_PORT"] = str(ports["http"])
            env["MNEMO_GATEWAY_HOST"] = "127.0.0.1"
        if "grpc" in ports:
            env["MNEMO_GRPC_PORT"] = str(ports["grpc"])
            env["MNEMO_GRPC_HOST"] = "127.0.0.1"
        env["MNEMO_METRICS_HOST"] = "127.0.0.1"
        name = d["metadata"]["name"]
        env["MNEMO_STATE_DIR"] = str(state / name)
        probe = c.get("readinessProbe", {}).get("httpGet")
        pods.append(Pod(name, c["args"], env, probe and (probe["path"], ports[probe["port"]])))
    return pods


def _helm_test(
    docs: list[dict[str, Any]], secrets: dict[tuple[str, str], str], state: Path, gateway: str
) -> tuple[list[str], dict[str, str]]:
    """The command and environment of the chart's Helm test pod (the load figures), as a
    process: the gateway's Service, which the cluster's DNS would resolve, is ``gateway``."""
    (pod,) = [d for d in docs if d["kind"] == "Pod"]
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (c,) = pod["spec"]["containers"]
    services = {
        f"http://{d['metadata']['name']}:{port['port']}"
        for d in docs
        if d["kind"] == "Service"
        for port in d["spec"]["ports"]
        if port["name"] == "http"
    }
    env: dict[str, str] = {}
    for e in c["env"]:
        if "value" in e:
            env[e["name"]] = gateway if e["value"] in services else e["value"]
        else:
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = secrets[(ref["name"], ref["key"])]
    assert env["MNEMO_BENCH_LOAD_URL"] == gateway, "the test pod asks a Service the chart makes"
    env["MNEMO_STATE_DIR"] = str(state / pod["metadata"]["name"])
    Path(env["MNEMO_STATE_DIR"]).mkdir(parents=True)
    assert c["command"][0] == "python"
    return [sys.executable, *c["command"][1:]], env


def _start(pod: Pod, logs: Path) -> None:
    log = (logs / f"{pod.name}.log").open("wb")
    # The image's entry point is `mnemo`; the chart gives its arguments.
    pod.proc = subprocess.Popen(
        [sys.executable, "-m", "mnemo_cli", *pod.args],
        env={"PATH": os.environ["PATH"], **pod.env},
        stdout=log,
        stderr=log,
    )


def _wait_ready(pods: list[Pod], logs: Path, timeout: float = 120.0) -> None:
    waiting = {p.name: p for p in pods}
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        for name, pod in list(waiting.items()):
            assert pod.proc is not None and pod.proc.poll() is None, (
                logs / f"{name}.log"
            ).read_text()[-3000:]
            assert pod.probe is not None
            try:
                r = httpx.get(f"http://127.0.0.1:{pod.probe[1]}{pod.probe[0]}", timeout=2)
            except httpx.HTTPError:
                continue
            if r.status_code == 200:
                del waiting[name]
        time.sleep(0.2)
    assert not waiting, f"not ready in {timeout}s: {sorted(waiting)}"


def _metrics(pod: Pod) -> str:
    return httpx.get(f"http://127.0.0.1:{pod.env['MNEMO_METRICS_PORT']}/metrics", timeout=10).text


def test_the_rendered_chart_runs_as_processes_and_serves_the_sdk(
    own_nats: str, fresh_database: str, tmp_path: Path, settle: Any, keys: Any
) -> None:
    # NATS's address in the values, the service user's password in its Secret; the keys the
    # gateway verifies with in theirs (HONCHO_API_KEY, the SDK's key, is signed with them).
    nats = urlsplit(own_nats)
    docs = _render(
        f"nats.url=nats://{nats.hostname}:{nats.port}",
        f"nats.user={nats.username}",
        # The Helm test pod of the load figures, at sizes a test can wait for.
        "loadBench.enabled=true",
        "loadBench.apiKeySecret=mnemo-bench",
        *(f"loadBench.env.MNEMO_BENCH_LOAD_{k}={v}" for k, v in _BENCH_SIZES.items()),
    )
    secrets = {
        ("mnemo-database", "url"): fresh_database,
        ("mnemo-nats", "password"): nats.password,
        ("mnemo-bench", "api-key"): keys.admin,
    }
    pods = _pods(docs, secrets, tmp_path / "state", {"mnemo-auth": keys.folder})
    (job,) = [p for p in pods if p.args == ["migrate"]]
    deployments = [p for p in pods if p is not job]
    assert {p.name for p in deployments} == {
        "m-mnemo-gateway",
        "m-mnemo-ingest",
        "m-mnemo-projector",
        "m-mnemo-deriver",
        "m-mnemo-summarizer",
        "m-mnemo-memory",
        "m-mnemo-grpc",
    }
    try:
        _start(job, tmp_path)
        assert job.proc is not None and job.proc.wait(120) == 0, (
            tmp_path / f"{job.name}.log"
        ).read_text()
        for pod in deployments:
            _start(pod, tmp_path)
        _wait_ready(deployments, tmp_path)
        (gateway,) = [p for p in deployments if p.name == "m-mnemo-gateway"]
        url = f"http://127.0.0.1:{gateway.env['MNEMO_GATEWAY_PORT']}"

        h = Honcho(base_url=url, workspace_id="chart", max_retries=0, timeout=30)
        alice = h.peer("alice")
        session = h.session("s")
        session.add_messages(
            [
                alice.message("I work as a nurse at the city hospital."),
                h.peer("bob").message("Nice!"),
            ]
        )
        assert [m.content for m in session.messages()] == [
            "I work as a nurse at the city hospital.",
            "Nice!",
        ]
        settle(h, timeout=90)
        facts = [f.content for f in alice.conclusions.list()]
        assert any("nurse" in f for f in facts), facts
        # Semantic search and chat run in the memory pod (context, dialectic), over NATS.
        hits = alice.conclusions.query("what is her job?", top_k=3)
        assert hits and "nurse" in hits[0].content
        assert "nurse" in (alice.chat("Where does Alice work?") or "")
        # The gRPC gateway, a pod of its own, reads the same messages.
        (rpc,) = [p for p in deployments if p.name == "m-mnemo-grpc"]
        address = f"127.0.0.1:{rpc.env['MNEMO_GRPC_PORT']}"
        with grpc.secure_channel(address, credentials(keys.admin)) as channel:
            listed = mg.MessageServiceStub(channel).ListMessages(
                mp.ListMessagesRequest(parent="workspaces/chart/sessions/s"), timeout=30
            )
        assert [m.content for m in listed.messages] == [
            "I work as a nurse at the city hospital.",
            "Nice!",
        ]

        by_name = {p.name: p for p in deployments}
        gw = _metrics(gateway)
        assert 'route="/v3/workspaces/{workspace_id}/sessions/{session_id}/messages"' in gw
        assert "mnemo_http_request_duration_seconds_bucket" in gw
        deriver = _metrics(by_name["m-mnemo-deriver"])
        # One durable per partition, each drained.
        lags = re.findall(
            r'mnemo_consumer_pending_messages\{durable="deriver-p\d+"\} (\S+)', deriver
        )
        assert len(lags) == subjects.DEFAULT_PARTITIONS and set(lags) == {"0.0"}, lags
        assert 'mnemo_dead_letters{stage="deriver"} 0.0' in deriver
        memory = _metrics(by_name["m-mnemo-memory"])
        assert 'mnemo_consumer_pending_messages{durable="dreamer-schedule"}' in memory
        assert 'mnemo_projection_pending_events{projection="memory"} 0.0' in memory
        stored = [
            ln
            for ln in memory.splitlines()
            if ln.startswith('mnemo_embedding_texts_total{kind="store"}')
        ]
        assert stored and float(stored[0].split()[-1]) >= 1
        projector = _metrics(by_name["m-mnemo-projector"])
        assert 'mnemo_projection_pending_events{projection="pg"} 0.0' in projector

        # `helm test`: the load figures, asked of the gateway as the test pod would.
        command, env = _helm_test(docs, secrets, tmp_path / "state", url)
        bench = subprocess.run(
            command,
            env={"PATH": os.environ["PATH"], **env},
            cwd=env["MNEMO_STATE_DIR"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert bench.returncode == 0, bench.stderr[-3000:]
        assert "| get_context, search query, 2000 tokens, history 150: at " in bench.stdout
        assert "the client's cores used (quiet reads)" in bench.stdout
        assert "deleting the " in bench.stdout
        # Its workspaces are gone when it ends; the SDK's stays.
        settle_deleted = time.monotonic() + 30
        while list(h.workspaces()) != ["chart"] and time.monotonic() < settle_deleted:
            time.sleep(0.2)
        assert list(h.workspaces()) == ["chart"]
    finally:
        for pod in deployments:
            if pod.proc is not None and pod.proc.poll() is None:
                pod.proc.terminate()
        for pod in deployments:
            if pod.proc is not None:
                try:
                    pod.proc.wait(20)
                except subprocess.TimeoutExpired:
                    pod.proc.kill()
    # SIGTERM, as the kubelet sends it: every process stops cleanly.
    assert {p.name: p.proc.returncode for p in deployments if p.proc} == {
        p.name: 0 for p in deployments
    }
