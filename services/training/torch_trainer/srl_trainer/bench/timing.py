"""Steady throughput from per-step seconds: the first step pays for warm-up (CUDA kernels chosen,
allocator growing, lazy initialisation) and is reported on its own."""

from __future__ import annotations

from typing import Any


def summarize_steps(step_seconds: list[float], tokens_per_step: int) -> dict[str, Any]:
    steady = step_seconds[1:] or step_seconds  # one step: it is all there is
    mean = sum(steady) / len(steady) if steady else None
    return {
        "first_step_s": step_seconds[0] if step_seconds else None,
        "steady_step_s": mean,
        "steady_tokens_per_s": tokens_per_step / mean if mean else None,
        "steady_from_steps": len(steady) if len(step_seconds) > 1 else 0,
        "step_seconds": step_seconds,
    }
