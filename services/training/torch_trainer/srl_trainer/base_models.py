"""Base models: where their weights are, what they are, and loading them (one kept in memory).

The trainer computes on the weights the engine serves: the GGUF, dequantized by transformers'
loader (every llama.cpp quantization that gguf-py reads), unless the catalog names Hugging Face
safetensors to train on instead (GPU deployments).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from transformers import AutoModelForCausalLM, PreTrainedModel

from .architectures import SUPPORTED, Architecture
from .errors import UnsupportedModelError
from .gguf_meta import GgufMeta, read_meta

# Tensor types that are not quantized: the trainer computes on them exactly as stored.
_FLOAT_TYPES = {"F32", "F16", "BF16", "F64"}


@dataclass(frozen=True)
class ModelRef:
    name: str
    gguf_path: str
    gguf_size: int
    source: str
    train_weights: str


def model_ref(message: Any) -> ModelRef:
    """The contract's BaseModel message as a ModelRef."""
    return ModelRef(name=message.name, gguf_path=message.gguf_path, gguf_size=message.gguf_size, source=message.source, train_weights=message.train_weights)


@dataclass(frozen=True)
class GgufFacts:
    path: str
    architecture: str
    tensor_types: tuple[str, ...]
    quantized: bool
    context_length: int
    n_head: int
    n_head_kv: int
    n_blocks: int


@dataclass
class LoadedModel:
    key: tuple[Any, ...]
    model: PreTrainedModel
    facts: GgufFacts
    arch: Architecture
    load_seconds: float


def resolve_gguf(ref: ModelRef) -> str:
    """A local path of the model's GGUF: the worker's own file when this machine sees it, else the
    catalog source (a path here, or an hf: reference downloaded through the Hugging Face cache)."""
    if ref.gguf_path and os.path.isfile(ref.gguf_path) and (not ref.gguf_size or os.path.getsize(ref.gguf_path) == ref.gguf_size):
        return ref.gguf_path
    source = ref.source
    if source.startswith("hf:"):
        parts = source[3:].split("/")
        if len(parts) < 3:
            raise UnsupportedModelError(f"{source}: expected hf:<owner>/<repo>/<file>.gguf")
        repo, filename = "/".join(parts[:2]), "/".join(parts[2:])
        try:
            from huggingface_hub import hf_hub_download

            return hf_hub_download(repo_id=repo, filename=filename)
        except Exception as error:  # network, auth, missing file: all mean "not reachable from here"
            raise UnsupportedModelError(f"could not fetch {source} from the Hugging Face Hub: {error}") from error
    if source and not source.startswith("builtin:") and os.path.isfile(source):
        return source
    raise UnsupportedModelError(
        f"base model {ref.name}: its GGUF ({ref.gguf_path or source}) is not reachable from this trainer; "
        "put it on shared storage at the same path, or use an hf: source"
    )


def inspect_gguf(path: str) -> GgufFacts:
    return gguf_facts(path, read_meta(path))


def gguf_facts(path: str, meta: GgufMeta) -> GgufFacts:
    def field(key: str, default: Any = None) -> Any:
        return meta.fields.get(key, default)

    arch = str(field("general.architecture", ""))
    types = sorted({t.type_name for t in meta.tensors.values()})
    matrix_types = {t.type_name for t in meta.tensors.values() if len(t.shape) >= 2}
    return GgufFacts(
        path=path,
        architecture=arch,
        tensor_types=tuple(types),
        quantized=any(t not in _FLOAT_TYPES for t in matrix_types),
        context_length=int(field(f"{arch}.context_length", 0) or 0),
        n_head=int(field(f"{arch}.attention.head_count", 0) or 0),
        n_head_kv=int(field(f"{arch}.attention.head_count_kv", 0) or field(f"{arch}.attention.head_count", 0) or 0),
        n_blocks=int(field(f"{arch}.block_count", 0) or 0),
    )


def why_not_trainable(facts: GgufFacts) -> str | None:
    if facts.architecture not in SUPPORTED:
        return f"architecture {facts.architecture!r} is not one the trainer supports ({', '.join(sorted(SUPPORTED))})"
    from gguf.quants import _type_traits  # the quantizations gguf-py can dequantize

    readable = {"F32", "F16", "F64", "I8", "I16", "I32", "I64"} | {t.name for t in _type_traits}
    unreadable = [t for t in facts.tensor_types if t not in readable]
    if unreadable:
        return f"tensor types {', '.join(unreadable)} cannot be dequantized by gguf-py"
    return None


class ModelCache:
    """Keeps the last base model loaded: jobs on one model follow each other."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._lock = threading.Lock()
        self._loaded: LoadedModel | None = None
        # Called before a loaded model is dropped for another: the live adapters on it are written
        # to disk first (live/registry.py), since their weights live inside its modules.
        self.on_switch: Callable[[LoadedModel], None] | None = None

    def dtype(self) -> torch.dtype:
        # CPU: f32 (bf16 matmuls are slow on most CPUs). CUDA: bf16 weights, trained under autocast.
        return torch.bfloat16 if self.device.type == "cuda" else torch.float32

    def get(self, ref: ModelRef) -> LoadedModel:
        path = resolve_gguf(ref)
        stat = os.stat(path)
        key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns, ref.train_weights, str(self.device))
        with self._lock:
            if self._loaded is not None and self._loaded.key == key:
                self._loaded.load_seconds = 0.0
                return self._loaded
            facts = inspect_gguf(path)
            reason = why_not_trainable(facts)
            if reason:
                raise UnsupportedModelError(f"base model {ref.name}: {reason}")
            if self._loaded is not None and self.on_switch is not None:
                self.on_switch(self._loaded)
            self._loaded = None  # free the previous model before loading the next
            started = time.perf_counter()
            model = self._load(path, ref.train_weights)
            model.requires_grad_(False)
            model.eval()  # no dropout; LoRA dropout is 0 anyway
            self._loaded = LoadedModel(key, model, facts, SUPPORTED[facts.architecture], time.perf_counter() - started)
            return self._loaded

    def _load(self, gguf_path: str, train_weights: str) -> PreTrainedModel:
        kwargs: dict[str, Any] = {"dtype": self.dtype()}
        if train_weights:
            location = train_weights
            if train_weights.startswith("hf:"):
                from huggingface_hub import snapshot_download

                try:
                    location = snapshot_download(repo_id=train_weights[3:], allow_patterns=["*.json", "*.safetensors"])
                except Exception as error:
                    raise UnsupportedModelError(f"could not fetch {train_weights}: {error}") from error
            if not Path(location, "config.json").is_file():
                raise UnsupportedModelError(f"{train_weights} is not a Hugging Face model directory (no config.json)")
            model = AutoModelForCausalLM.from_pretrained(location, **kwargs)
        else:
            p = Path(gguf_path)
            model = AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name, **kwargs)
        return model.to(self.device)
