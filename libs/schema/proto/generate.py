"""Generate the Python code of Mnemo's gRPC API from its protos (``make proto``).

``--check`` generates into a temporary folder and fails if the committed code differs: run by
``make lint``, so generated code cannot fall behind its protos.
"""

from __future__ import annotations

import filecmp
import sys
import tempfile
from importlib.resources import files
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "src"
PACKAGE = Path("mnemo") / "v1"


def generate(out: Path) -> None:
    """Write ``mnemo/v1/*_pb2.py``, ``*_pb2.pyi`` and ``*_pb2_grpc.py`` under ``out``."""
    protos = sorted(str(p.relative_to(HERE)) for p in (HERE / PACKAGE).glob("*.proto"))
    include = str(files("grpc_tools") / "_proto")
    # mypy-protobuf's plugins type the messages and the stubs and servicers (``*_pb2.pyi``,
    # ``*_pb2_grpc.pyi``), so callers are checked under mypy strict.
    plugins = Path(sys.executable).parent
    args = [
        "protoc",
        f"-I{HERE}",
        f"-I{include}",
        f"--python_out={out}",
        f"--plugin=protoc-gen-mypy={plugins / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={plugins / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_grpc_out={out}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    for folder in (out / "mnemo", out / PACKAGE):
        (folder / "__init__.py").touch()


def main() -> None:
    if sys.argv[1:] == ["--check"]:
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp))
            fresh, committed = Path(tmp) / PACKAGE, OUT / PACKAGE
            names = sorted(p.name for p in fresh.iterdir() if p.is_file())
            _, differ, missing = filecmp.cmpfiles(fresh, committed, names, shallow=False)
            extra = sorted(
                p.name for p in committed.iterdir() if p.is_file() and p.name not in names
            )
            if differ or missing or extra:
                raise SystemExit(
                    f"generated gRPC code is stale (differs: {differ}, missing: {missing},"
                    f" extra: {extra}); run `make proto`"
                )
        return
    generate(OUT)


if __name__ == "__main__":
    main()
