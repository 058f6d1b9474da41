"""OPTIM_STEP: one AdamW step (torch.optim.AdamW, the decoupled weight decay Tinker documents as
identical) over a live adapter's held gradients, clipped to a global norm, then cleared."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..errors import InputError


def check_adam(adam: Any) -> None:
    """AdamParams as sent (the service resolves Tinker's defaults; zero is zero here)."""
    checks = (
        ("learning_rate", adam.learning_rate >= 0),
        ("beta1", 0 <= adam.beta1 < 1),
        ("beta2", 0 <= adam.beta2 < 1),
        # eps 0 turns a zero gradient's update into 0/0: an unset eps is a caller's bug.
        ("eps", adam.eps > 0),
        ("weight_decay", adam.weight_decay >= 0),
        ("grad_clip_norm", adam.grad_clip_norm >= 0),
    )
    for name, ok in checks:
        value = getattr(adam, name)
        if not math.isfinite(value) or not ok:
            raise InputError(f"adam.{name} is out of range: {value}")


def new_optimizer(params: list[torch.nn.Parameter], moments: dict[str, tuple[np.ndarray, np.ndarray]] | None, names: list[str], steps: int) -> torch.optim.AdamW:
    """An AdamW over `params` (in `names` order), its moments and step restored when given."""
    optimizer = torch.optim.AdamW(params, lr=0.0)
    if moments is not None and steps > 0:
        for name, param in zip(names, params):
            exp_avg, exp_avg_sq = moments[name]
            optimizer.state[param] = {
                "step": torch.tensor(float(steps), dtype=torch.float32),
                "exp_avg": torch.from_numpy(np.array(exp_avg, dtype=np.float32)).to(param.device),
                "exp_avg_sq": torch.from_numpy(np.array(exp_avg_sq, dtype=np.float32)).to(param.device),
            }
    return optimizer


def step(optimizer: torch.optim.AdamW, params: list[torch.nn.Parameter], adam: Any) -> tuple[dict[str, float], bool]:
    """(metrics, applied): grad_norm before clipping and learning_rate. Without held gradients the
    step runs on zeros (moments decay, weight decay applies); with a non-finite norm nothing is
    applied. The gradients are cleared either way."""
    for param in params:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
    limit = adam.grad_clip_norm if adam.grad_clip_norm > 0 else float("inf")  # inf: scales by exactly 1
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, limit))
    applied = math.isfinite(grad_norm)
    if applied:
        for group in optimizer.param_groups:
            group.update(lr=adam.learning_rate, betas=(adam.beta1, adam.beta2), eps=adam.eps, weight_decay=adam.weight_decay)
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return {"grad_norm": grad_norm, "learning_rate": float(adam.learning_rate)}, applied
