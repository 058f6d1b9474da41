"""The benchmark's batch and LoRA settings, shared by the plain loop and the trainer's client so
that both train the very same rows with the same LoRA (written to a JSON file for the child
processes)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..architectures import SUPPORTED

# Every projection: the trainer's default targets of the dense families (Llama, Qwen).
TARGETS = SUPPORTED["llama"].default_targets


@dataclass(frozen=True)
class Settings:
    rows: int = 16
    seq: int = 1024
    steps: int = 6
    rank: int = 16
    alpha: float = 32.0
    lr: float = 2e-4
    lora_seed: int = 3407  # the plain loop seeds torch with it right before get_peft_model, as the trainer does
    row_seed: int = 1
    vocab_size: int = 0  # the model's; token ids stay below it
    targets: tuple[str, ...] = field(default=TARGETS)

    @property
    def step_tokens(self) -> int:
        return self.rows * self.seq

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @staticmethod
    def read(path: Path) -> "Settings":
        data = json.loads(path.read_text())
        data["targets"] = tuple(data["targets"])
        return Settings(**data)


def make_rows(settings: Settings) -> np.ndarray:
    """[rows, seq] token ids, the same on every step and for every configuration. Below 128000:
    Llama-3's special tokens start there, and the draws stay ordinary tokens on every shape."""
    high = min(settings.vocab_size, 128000) if settings.vocab_size else 128000
    return np.random.default_rng(settings.row_seed).integers(0, high, size=(settings.rows, settings.seq), dtype=np.int64)


def trained_flags(settings: Settings) -> list[bool]:
    """The second half of each row is trained (the first half plays the prompt)."""
    return [t >= settings.seq // 2 for t in range(settings.seq)]
