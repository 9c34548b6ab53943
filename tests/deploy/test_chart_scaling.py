"""The Helm chart's workloads at scale: every stage runs where it should, how each scales (replicas,
HPAs, KEDA on the consumers' lag, partitions), disruption budgets, the umbrella chart with NATS,
and what the chart refuses to render."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mnemo_cli.migrate import stage_consumers
from mnemo_deriver.adapters.bus import consumers as deriver_consumers
from mnemo_deriver.settings import DeriverSettings
from mnemo_dreamer.adapters.bus import consumers as dreamer_consumers
from mnemo_dreamer.settings import DreamerSettings
from mnemo_schema import subjects
from mnemo_summarizer.adapters.bus import consumers as summarizer_consumers
from mnemo_summarizer.settings import SummarizerSettings

pytestmark = pytest.mark.usefixtures("helm_installed")
Manifest = dict[str, Any]
CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "mnemo"
CRDS = ("monitoring.coreos.com/v1/ServiceMonitor", "keda.sh/v1alpha1/ScaledObject")
# The partitioned stages (projector, memory-projection, deriver, summarizer) share the
# partitions by lease, so a rolling update is safe for them; these must never run twice.
SINGLETONS = {"ingest", "dreamer", "memory"}


def _of(docs: list[Manifest], kind: str) -> list[Manifest]:
    return [d for d in docs if d["kind"] == kind]


def test_every_stage_runs_somewhere_exactly_once(case: list[Manifest]) -> None:
    ran: list[str] = []
    for d in _of(case, "Deployment"):
        (c,) = d["spec"]["template"]["spec"]["containers"]
        ran += c["args"][2].split(",")
    # The projector component runs twice: entity tables in one pod, memory in the other.
    assert ran.count("projector") == 2
    for component in ("gateway", "ingest", "deriver", "context", "dialectic", "dreamer"):
        assert ran.count(component) == 1, component


def test_single_replica_stages_never_run_twice(case: list[Manifest]) -> None:
    for d in _of(case, "Deployment"):
        component = d["metadata"]["labels"]["app.kubernetes.io/component"]
        if component in SINGLETONS:
            assert d["spec"]["strategy"]["type"] == "Recreate", component
            assert d["spec"].get("replicas", 1) <= 1, component


def test_a_pdb_for_every_deployment_when_enabled(rendered: Any) -> None:
    for values, crds in (((), False), (("full-values.yaml",), True)):
        docs = rendered(values, crds=crds)
        pdbs = {p["metadata"]["name"]: p for p in _of(docs, "PodDisruptionBudget")}
        for d in _of(docs, "Deployment"):
            pdb = pdbs[d["metadata"]["name"]]
            assert pdb["spec"]["selector"]["matchLabels"] == d["spec"]["selector"]["matchLabels"]
            assert pdb["spec"]["maxUnavailable"] == 1
    assert not _of(rendered(("minimal-values.yaml",)), "PodDisruptionBudget")


def test_hpas_target_the_readers_and_leave_replicas_to_them(rendered: Any) -> None:
    docs = rendered(("full-values.yaml",), crds=True)
    deployments = {d["metadata"]["name"]: d for d in _of(docs, "Deployment")}
    targets = {h["spec"]["scaleTargetRef"]["name"] for h in _of(docs, "HorizontalPodAutoscaler")}
    assert targets == {"m-mnemo-gateway", "m-mnemo-context", "m-mnemo-dialectic"}
    for name in targets:
        assert "replicas" not in deployments[name]["spec"]


def test_keda_triggers_name_the_stream_and_the_consumers_the_stages_read(rendered: Any) -> None:
    docs = rendered(("full-values.yaml",), crds=True)
    expected = {
        "m-mnemo-deriver": [c.durable_name for c in deriver_consumers(DeriverSettings(), 8)],
        "m-mnemo-summarizer": [
            c.durable_name for c in summarizer_consumers(SummarizerSettings(), 8)
        ],
        "m-mnemo-dreamer": [c.durable_name for c in dreamer_consumers(DreamerSettings())],
    }
    scaled = {s["spec"]["scaleTargetRef"]["name"]: s for s in _of(docs, "ScaledObject")}
    assert set(scaled) == set(expected)
    deployments = {d["metadata"]["name"] for d in _of(docs, "Deployment")}
    every_durable = {c.durable_name for c in stage_consumers(8)}
    for target, so in scaled.items():
        assert target in deployments
        # The partitioned workers scale up to the partition count; the dreamer to one.
        most = 1 if target == "m-mnemo-dreamer" else 8
        assert 1 <= so["spec"]["maxReplicaCount"] <= most
        triggers = so["spec"]["triggers"]
        assert all(t["type"] == "nats-jetstream" for t in triggers)
        assert all(t["metadata"]["stream"] == subjects.STREAM for t in triggers)
        assert [t["metadata"]["consumer"] for t in triggers] == expected[target]
        assert {t["metadata"]["consumer"] for t in triggers} <= every_durable


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (("database.existingSecret=",), "database.existingSecret is required"),
        (("auth.existingSecret=",), "auth.enabled needs auth.existingSecret"),
        (("nats.url=nats://mnemo:pw@nats:4222",), "nats.url carries credentials"),
        (("services.deriver.replicas=9",), "services.deriver.replicas (9) exceeds partitions (8)"),
        (
            ("partitions=2", "services.summarizer.replicas=3"),
            "services.summarizer.replicas (3) exceeds partitions (2)",
        ),
        (("services.ingest.replicas=2",), "services.ingest.replicas must be 1"),
        (
            (
                "services.dreamer.enabled=true",
                "services.dreamer.replicas=2",
                "qdrant.url=http://q:6333",
            ),
            "services.dreamer.replicas must be 1",
        ),
        (("partitions=0",), "/partitions"),
        (("services.context.enabled=true",), "set qdrant.url"),
        (("services.deriver.autoscaling.enabled=true",), "only the stateless readers"),
        (
            ("qdrant.url=http://q:6333", "services.memoryProjection.enabled=true"),
            "both project memory",
        ),
        (("services.gateway.components={gateway,oracle}",), 'unknown component "oracle"'),
        (("keda.enabled=true",), "ScaledObject CRD"),
        (("nats.url=",), "NATS has no source"),
        # values.schema.json: a misspelt or mistyped value names its path.
        (("services.deriver.replica=2",), "additional properties 'replica' not allowed"),
        (("services.gateway.replicas=two",), "/services/gateway/replicas"),
    ],
)
def test_the_chart_refuses_what_it_cannot_run(
    chart: Any, sets: tuple[str, ...], message: str
) -> None:
    assert message in chart.refusal(sets=sets)


def test_keda_cannot_scale_a_worker_past_its_partitions(chart: Any) -> None:
    err = chart.refusal(
        ("full-values.yaml",), sets=("services.deriver.keda.maxReplicaCount=9",), crds=True
    )
    assert "services.deriver.keda.maxReplicaCount exceeds partitions (8)" in err
    err = chart.refusal(
        ("full-values.yaml",), sets=("services.dreamer.keda.maxReplicaCount=2",), crds=True
    )
    assert "services.dreamer.keda.maxReplicaCount must be 1" in err


def test_partitioned_stages_scale_out_and_every_container_is_told_the_partition_count(
    rendered: Any,
) -> None:
    docs = rendered(
        sets=("partitions=4", "services.deriver.replicas=3", "services.projector.replicas=2")
    )
    deployments = {d["metadata"]["name"]: d for d in _of(docs, "Deployment")}
    assert deployments["m-mnemo-deriver"]["spec"]["replicas"] == 3
    assert deployments["m-mnemo-projector"]["spec"]["replicas"] == 2
    (config,) = [c for c in _of(docs, "ConfigMap") if "MNEMO_LOG_FORMAT" in c.get("data", {})]
    # Every process checks it against the stream's count and refuses to start on a mismatch.
    assert config["data"]["MNEMO_PARTITIONS"] == "4"


def test_the_umbrella_chart_points_mnemo_at_its_own_nats(chart: Any, tmp_path: Path) -> None:
    umbrella = CHART.parent / "mnemo-with-nats"
    meta = yaml.safe_load((umbrella / "Chart.yaml").read_text())
    deps = {d["name"]: d for d in meta["dependencies"]}
    assert deps["mnemo"]["repository"] == "file://../mnemo"
    assert deps["mnemo"]["version"] == yaml.safe_load((CHART / "Chart.yaml").read_text())["version"]
    assert "nats" in deps
    values = yaml.safe_load((umbrella / "values.yaml").read_text())
    assert values["nats"]["config"]["jetstream"]["enabled"] is True
    # NATS asks for the service user's password, read from the Secret Mnemo reads it from.
    (user,) = values["nats"]["config"]["merge"]["authorization"]["users"]
    assert user["user"] == values["mnemo"]["nats"]["user"]
    assert user["password"] == "<< $MNEMO_NATS_PASSWORD >>"
    ref = values["nats"]["container"]["env"]["MNEMO_NATS_PASSWORD"]["valueFrom"]["secretKeyRef"]
    assert (ref["name"], ref["key"]) == (
        values["mnemo"]["nats"]["existingSecret"],
        values["mnemo"]["nats"]["existingSecretKey"],
    )
    # The values the umbrella hands to this chart, rendered by this chart.
    (tmp_path / "mnemo.yaml").write_text(yaml.safe_dump(values["mnemo"]))
    out = chart.helm(
        "template",
        "m",
        str(CHART),
        "-f",
        str(tmp_path / "mnemo.yaml"),
        "--set",
        "keda.enabled=true",
        *[arg for api in CRDS for arg in ("--api-versions", api)],
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert config["data"]["NATS_URL"] == "nats://m-nats:4222"
    (job,) = [d for d in docs if d["kind"] == "Job"]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,pre-upgrade"
    endpoints = {
        t["metadata"]["natsServerMonitoringEndpoint"]
        for d in docs
        if d["kind"] == "ScaledObject"
        for t in d["spec"]["triggers"]
    }
    assert endpoints == {"m-nats-headless:8222"}
