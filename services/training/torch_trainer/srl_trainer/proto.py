"""The trainer's gRPC contract (proto/srl/trainer/v1/trainer.proto) as Python modules.

The stubs are compiled from the repository's proto with grpc_tools at first use, into a cache
directory keyed by the file's hash, so the contract has one source (the .proto; `gen/` holds only
the TypeScript side) and a changed contract is never served with stale stubs.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

PROTO_ROOT = Path(__file__).resolve().parents[4] / "proto"
PROTO_FILE = "srl/trainer/v1/trainer.proto"


def _cache_root() -> Path:
    base = os.environ.get("SRL_CACHE_DIR") or str(Path.home() / ".cache" / "srl")
    return Path(base) / "trainer-proto"


def _compile(out_dir: Path) -> None:
    from grpc_tools import protoc  # imported lazily: only needed when the cache is cold

    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", PROTO_FILE])
    if code != 0:
        raise RuntimeError(f"protoc failed ({code}) compiling {PROTO_ROOT / PROTO_FILE}")


def load() -> tuple[ModuleType, ModuleType]:
    """Returns (trainer_pb2, trainer_pb2_grpc)."""
    digest = hashlib.sha256((PROTO_ROOT / PROTO_FILE).read_bytes()).hexdigest()[:16]
    target = _cache_root() / digest
    if not (target / "srl" / "trainer" / "v1" / "trainer_pb2_grpc.py").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f"{digest}."))
        try:
            _compile(staging)
            try:
                staging.rename(target)
            except OSError:
                if not target.exists():  # lost a race to another process: theirs is the same
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    pb2 = importlib.import_module("srl.trainer.v1.trainer_pb2")
    grpc_mod = importlib.import_module("srl.trainer.v1.trainer_pb2_grpc")
    return pb2, grpc_mod
