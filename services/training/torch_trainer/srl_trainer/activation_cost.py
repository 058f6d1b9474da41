"""What one token of a micro-batch costs in memory while it trains, measured on the model as it
will train (its dtype, autocast, the attached LoRA, the packed attention, the log-prob head):
one forward pass of a probe pack under autograd, summing the distinct storages autograd saves for
the backward pass. Weights are not counted (they exist anyway); the probe's graph is dropped
unused. The figure is per (base model, adapter shape, device) and kept."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .forward import causal_lm_of, pack_device, scored_logprobs
from .packing import build_pack

PROBE_TOKENS = 128
# PEFT's parameter names carry the adapter's name: "...q_proj.lora_A.<name>.weight".
_ADAPTER_NAME = re.compile(r"\.(lora_[AB]|lora_embedding_[AB])\.[^.]+\.")


@dataclass(frozen=True)
class ActivationCost:
    bytes_per_token: float  # kept by autograd with no checkpointing
    checkpointed_bytes_per_token: float  # with each decoder layer recomputed: its input kept, one layer live
    probe_tokens: int


_cache: dict[tuple[Any, ...], ActivationCost] = {}
_lock = threading.Lock()


def activation_cost(model: torch.nn.Module, model_key: tuple[Any, ...], autocast: bool) -> ActivationCost:
    # The adapter's shape, not its name: every live adapter of one shape shares the measurement.
    trainable = tuple(sorted((_ADAPTER_NAME.sub(r".\1.", n), tuple(p.shape)) for n, p in model.named_parameters() if p.requires_grad))
    key = (model_key, trainable, autocast)
    with _lock:
        if key not in _cache:
            _cache[key] = _measure(model, autocast)
        return _cache[key]


def _measure(model: torch.nn.Module, autocast: bool) -> ActivationCost:
    lm = causal_lm_of(model)
    config = lm.config
    tokens = max(16, min(PROBE_TOKENS, int(getattr(config, "max_position_embeddings", PROBE_TOKENS) or PROBE_TOKENS)))
    ids = np.arange(tokens, dtype=np.int64) % max(int(config.vocab_size) - 1, 1)
    pack = build_pack([0], {0: ids}, {0: np.ones(tokens - 1, dtype=bool)}, pack_device(model))
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()} | {b.untyped_storage().data_ptr() for b in model.buffers()}
    saved: dict[int, int] = {}

    def keep(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        lp, _ = scored_logprobs(model, pack, chunk_tokens=PROBE_TOKENS, autocast=autocast)
        del lp
    full = sum(saved.values()) / tokens
    layers = max(int(getattr(config, "num_hidden_layers", 1) or 1), 1)
    element = 2 if autocast else next(lm.parameters()).element_size()
    # Checkpointed: each layer's input is kept ([tokens, hidden] per layer) and one layer's
    # activations exist at a time while it is recomputed for its backward pass.
    checkpointed = layers * int(config.hidden_size) * element + full / layers
    return ActivationCost(bytes_per_token=full, checkpointed_bytes_per_token=checkpointed, probe_tokens=tokens)
