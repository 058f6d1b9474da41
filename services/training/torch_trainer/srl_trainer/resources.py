"""Memory and speed settings of the trainer, per job from the spec's hints with process defaults
from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .base_models import LoadedModel

# Packed tokens per forward/backward pass. Bigger packs use the cores better; activations grow
# with them (bounded by checkpointing, below).
DEFAULT_MICRO_BATCH_TOKENS = int(os.environ.get("TRAINER_MICRO_BATCH_TOKENS", "2048"))
# Positions whose logits are computed at once: 256 x a 150k vocabulary is 150 MB in f32.
DEFAULT_LOGITS_CHUNK_TOKENS = int(os.environ.get("TRAINER_LOGITS_CHUNK_TOKENS", "256"))
# auto | on | off: recomputing each decoder layer in the backward pass instead of keeping its
# activations saves most of the training memory and costs ~25% of the speed (bench:train).
DEFAULT_GRADIENT_CHECKPOINTING = os.environ.get("TRAINER_GRADIENT_CHECKPOINTING", "auto")


def _default_activation_budget_mb() -> int:
    """A quarter of the machine's memory: "auto" checkpoints only when activations would pass it."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 8 << 30
    return int(total / 4 / 2**20)


ACTIVATION_BUDGET_MB = int(os.environ.get("TRAINER_ACTIVATION_BUDGET_MB", "0")) or _default_activation_budget_mb()


@dataclass(frozen=True)
class Resources:
    micro_batch_tokens: int
    logits_chunk_tokens: int
    gradient_checkpointing: str  # auto | on | off

    def checkpoint(self, pack_tokens: int, loaded: LoadedModel) -> bool:
        if self.gradient_checkpointing == "on":
            return True
        if self.gradient_checkpointing == "off":
            return False
        return activation_mb(pack_tokens, loaded) > ACTIVATION_BUDGET_MB


def activation_mb(tokens: int, loaded: LoadedModel) -> float:
    """What autograd keeps for one pack, as measured on SmolLM2-135M (d 576, MLP 1536, 30 layers:
    2.6 GB for 1024 tokens): per layer and token about 16 hidden-sized and 8 MLP-sized float32
    vectors (norms, projections, LoRA branches, the gated MLP, the allocator's slack)."""
    config = loaded.model.config
    hidden = getattr(config, "hidden_size", 0)
    intermediate = getattr(config, "intermediate_size", 4 * hidden)
    layers = getattr(config, "num_hidden_layers", 1)
    return tokens * layers * (16 * hidden + 8 * intermediate) * 4 / 2**20


def from_hints(hints: object) -> Resources:
    micro = getattr(hints, "micro_batch_tokens", 0) or DEFAULT_MICRO_BATCH_TOKENS
    chunk = getattr(hints, "logits_chunk_tokens", 0) or DEFAULT_LOGITS_CHUNK_TOKENS
    mode = getattr(hints, "gradient_checkpointing", "") or DEFAULT_GRADIENT_CHECKPOINTING
    if mode not in ("auto", "on", "off"):
        mode = "auto"
    return Resources(micro_batch_tokens=max(1, micro), logits_chunk_tokens=max(1, chunk), gradient_checkpointing=mode)
