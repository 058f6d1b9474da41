"""LoRA settings: their defaults, read from the contract (trainer.proto LoraConfig), and PEFT's
configuration of the plain LoRA the trainer makes."""

from __future__ import annotations

from typing import Iterable

from peft import LoraConfig

from .. import proto

_DEFAULTS = proto.defaults("LoraConfig")
# A job's rank or alpha of 0 means the previous adapter's, else these.
DEFAULT_RANK: int = int(_DEFAULTS["rank"])
DEFAULT_ALPHA: float = float(_DEFAULTS["alpha"])
# A fresh adapter's seed when the job sends none.
DEFAULT_SEED: int = int(_DEFAULTS["seed"])


def peft_config(rank: int, alpha: float, targets: Iterable[str]) -> LoraConfig:
    """A plain LoRA: delta W = (alpha / rank) B A on each target module, no dropout, no bias."""
    return LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(targets), lora_dropout=0.0, bias="none")
