"""The trainer's gRPC contract (proto/srl/trainer/v1/trainer.proto) as Python modules, and the
defaults of its settings.

The stubs are compiled from the repository's proto with grpc_tools at first use, into a cache
directory keyed by the files' hash, so the contract has one source (the .proto; `gen/` holds only
the TypeScript side) and a changed contract is never served with stale stubs. trainer.proto
imports srl/v1/options.proto, whose `(srl.v1.field).default_json` holds a setting's default.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

PROTO_ROOT = Path(__file__).resolve().parents[4] / "proto"
PROTO_FILE = "srl/trainer/v1/trainer.proto"
# PROTO_FILE and the files it imports (the well-known types come with grpc_tools).
PROTO_FILES = (PROTO_FILE, "srl/v1/options.proto")


def _cache_root() -> Path:
    base = os.environ.get("SRL_CACHE_DIR") or str(Path.home() / ".cache" / "srl")
    return Path(base) / "trainer-proto"


def _compile(out_dir: Path) -> None:
    from grpc_tools import protoc  # imported lazily: only needed when the cache is cold

    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", *PROTO_FILES])
    if code != 0:
        raise RuntimeError(f"protoc failed ({code}) compiling {', '.join(str(PROTO_ROOT / f) for f in PROTO_FILES)}")


def _digest() -> str:
    h = hashlib.sha256()
    for name in PROTO_FILES:
        h.update(name.encode() + b"\0" + (PROTO_ROOT / name).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def load() -> tuple[ModuleType, ModuleType]:
    """Returns (trainer_pb2, trainer_pb2_grpc)."""
    digest = _digest()
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


@functools.cache
def defaults(message_name: str) -> dict[str, Any]:
    """The contract's default of each field of a trainer message ("RlLoss", "LoraConfig", ...): its
    `(srl.v1.field).default_json`, else the field's zero value."""
    pb2, _ = load()
    rules = importlib.import_module("srl.v1.options_pb2").field
    out: dict[str, Any] = {}
    for field in pb2.DESCRIPTOR.message_types_by_name[message_name].fields:
        text = field.GetOptions().Extensions[rules].default_json
        out[field.name] = json.loads(text) if text else field.default_value
    return out


def with_defaults(message: Any) -> dict[str, Any]:
    """A trainer message's singular fields by name, an unset one (its zero value: these fields have
    no presence) replaced by the contract's default."""
    fallback = defaults(message.DESCRIPTOR.name)
    return {f.name: getattr(message, f.name) or fallback[f.name] for f in message.DESCRIPTOR.fields if not f.is_repeated}
