"""Whether an adapter made elsewhere fits a base model, from the base's GGUF header alone (no
weights are loaded): before it is converted, since a LoRA for another model would otherwise make a
GGUF that llama.cpp refuses, or worse, serves."""

from __future__ import annotations

from dataclasses import dataclass

from ..architectures import SUPPORTED, Architecture, gguf_tensor_namer
from ..base_models import GgufFacts, gguf_facts
from ..errors import InputError, UnsupportedModelError
from ..gguf_meta import read_meta
from .adapter import Adapter


@dataclass(frozen=True)
class BaseTensors:
    """A base model as its GGUF's header describes it (a gguf_files.GgufBase)."""

    facts: GgufFacts
    arch: Architecture
    # GGUF tensor name -> ggml dims; a weight matrix is (n_in, n_out).
    shapes: dict[str, tuple[int, ...]]


def read_base(path: str) -> BaseTensors:
    try:
        meta = read_meta(path)
    except Exception as error:
        raise UnsupportedModelError(f"cannot read the base model's GGUF ({path}): {error}") from error
    facts = gguf_facts(path, meta)
    arch = SUPPORTED.get(facts.architecture)
    if arch is None:
        raise UnsupportedModelError(f"architecture {facts.architecture!r} is not one the trainer writes LoRA adapters for ({', '.join(sorted(SUPPORTED))})")
    if facts.n_blocks <= 0 or facts.n_head <= 0 or facts.n_head_kv <= 0:
        raise UnsupportedModelError(f"the base model's GGUF ({path}) lacks its block or head counts")
    return BaseTensors(facts, arch, {name: info.shape for name, info in meta.tensors.items()})


def check_fits(adapter: Adapter, base: BaseTensors) -> None:
    """Every pair adapts a projection the base model has, with its dimensions."""
    facts = base.facts
    namer = gguf_tensor_namer(facts.architecture, facts.n_blocks)
    for module in sorted(adapter.pairs):
        a, b = adapter.pairs[module]
        if module.rsplit(".", 1)[-1] not in base.arch.default_targets:
            raise InputError(f"{module}: LoRA on it is not supported for {facts.architecture}; the projections are {', '.join(base.arch.default_targets)}")
        try:
            tensor = f"{namer(module)}.weight"
        except ValueError:
            raise InputError(f"{module}: the base model ({facts.architecture}, {facts.n_blocks} blocks) has no tensor for it") from None
        shape = base.shapes.get(tensor)
        if shape is None or len(shape) != 2:
            raise InputError(f"{module}: the base model has no weight matrix {tensor}")
        n_in, n_out = shape
        if a.shape[1] != n_in or b.shape[0] != n_out:
            raise InputError(f"{module}: the adapter maps {a.shape[1]} -> {b.shape[0]} features, the base model's {tensor} {n_in} -> {n_out}; is the adapter for another model?")
