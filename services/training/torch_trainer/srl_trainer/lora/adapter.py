"""An adapter's weights in memory, whatever file they came from or go to."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# PEFT's prefix of module names (in the wrapped model and in its files); Adapter keys omit it.
PEFT_PREFIX = "base_model.model."


@dataclass
class Adapter:
    """A LoRA: per Hugging Face module name ("model.layers.0.self_attn.q_proj"), the pair
    A [rank, n_in], B [n_out, rank], as PEFT holds them; delta W = (alpha / rank) B A."""

    rank: int
    alpha: float
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def targets(self) -> set[str]:
        return {name.rsplit(".", 1)[-1] for name in self.pairs}
