"""FORWARD and FORWARD_BACKWARD over a command's datums: packed into micro-batches (packing.py),
the target log-prob at every position (forward.py: chunked log-softmax, the vocabulary projection
under autograd only where the loss has a gradient), the loss per position (tinker_losses.py), and
with the backward pass the gradients added to those the adapter holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import torch

from ..forward import layer_checkpointing, pack_device, scored_logprobs
from ..packing import build_pack, plan_packs
from ..resources import Resources
from ..tinker_losses import needs_grad, tinker_loss
from .command_input import Datum


@dataclass
class ForwardResult:
    logprobs: list[np.ndarray]  # per datum, per position
    elementwise_loss: list[np.ndarray]
    loss_sum: float


def run(model: torch.nn.Module, datums: list[Datum], loss_fn: str, config: Mapping[str, float], resources: Resources, backward: bool, check: Callable[[], None]) -> ForwardResult:
    device = pack_device(model)
    autocast = device.type == "cuda"
    logprobs: list[np.ndarray] = [np.zeros(0, np.float32)] * len(datums)
    elementwise: list[np.ndarray] = [np.zeros(0, np.float32)] * len(datums)
    total = 0.0
    tokens = {i: d.tokens for i, d in enumerate(datums)}
    targets = {i: d.targets for i, d in enumerate(datums)}
    every = {i: np.ones(len(d.tokens), dtype=bool) for i, d in enumerate(datums)}
    for members in plan_packs({i: len(d.tokens) for i, d in enumerate(datums)}, resources.micro_batch_tokens):
        check()
        pack = build_pack(members, tokens, every, device, targets=targets)
        inputs = _pack_inputs([datums[r] for r in pack.rows], config, device)
        with torch.set_grad_enabled(backward), layer_checkpointing(model, backward and resources.checkpoint(pack.num_tokens)):
            grad_positions = needs_grad(loss_fn, config, inputs, len(pack.targets)) if backward else None
            lp, _ = scored_logprobs(model, pack, resources.logits_chunk_tokens, autocast, grad_positions)
            per = tinker_loss(loss_fn, config, lp, inputs, pack.row_of, len(pack.rows))
            if backward and per.requires_grad:
                per.sum().backward()
        total += float(per.detach().sum())
        lp_np, per_np = lp.detach().float().cpu().numpy(), per.detach().float().cpu().numpy()
        start = 0
        for r, where in zip(pack.rows, pack.row_positions):
            logprobs[r] = lp_np[start : start + len(where)]
            elementwise[r] = per_np[start : start + len(where)]
            start += len(where)
    return ForwardResult(logprobs, elementwise, total)


def _pack_inputs(datums: list[Datum], config: Mapping[str, float], device: torch.device) -> dict[str, torch.Tensor]:
    """Each input over the pack's positions; where a datum lacks an optional one, its default."""
    defaults = {"weights": 1.0, **{k: v for k, v in config.items() if k.startswith("clip_")}}
    names = sorted({name for d in datums for name in d.inputs})
    out: dict[str, torch.Tensor] = {}
    for name in names:
        parts = [d.inputs[name] if name in d.inputs else np.full(len(d.tokens), defaults[name], dtype=np.float32) for d in datums]
        out[name] = torch.from_numpy(np.concatenate(parts)).to(device)
    return out
