"""What gets measured: the plain loop and the trainer in three memory settings, each run in a fresh
process so that its peak memory is its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .settings import Settings


@dataclass(frozen=True)
class Config:
    name: str
    label: str
    kind: str  # "plain" | "trainer"
    checkpointing: str = ""  # ResourceHints.gradient_checkpointing; "": the trainer's default
    one_pack: bool = False  # micro_batch_tokens = the whole step's tokens

    def hints(self, settings: Settings) -> dict[str, Any]:
        """The job's ResourceHints fields; none set means the trainer's defaults (env or built in)."""
        hints: dict[str, Any] = {}
        if self.one_pack:
            hints["micro_batch_tokens"] = settings.step_tokens
        if self.checkpointing:
            hints["gradient_checkpointing"] = self.checkpointing
        return hints


CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config("plain", "plain PyTorch + PEFT", "plain"),
        Config("defaults", "trainer, defaults", "trainer"),
        Config("ckpt_on", "trainer, gradient checkpointing on", "trainer", checkpointing="on"),
        # The whole step in one pass: a fixed micro-batch under "auto" is checkpointed when it passes
        # the trainer's memory budget, so checkpointing is turned off explicitly.
        Config("one_pack", "trainer, whole step as one micro-batch, checkpointing off", "trainer", checkpointing="off", one_pack=True),
    )
}


def pick(names: str) -> list[Config]:
    """`--configs plain,defaults`: a subset, in the canonical order (plain first: the ratios' base)."""
    wanted = [n.strip() for n in names.split(",") if n.strip()] if names else list(CONFIGS)
    unknown = [n for n in wanted if n not in CONFIGS]
    if unknown:
        raise ValueError(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    return [c for name, c in CONFIGS.items() if name in wanted]
