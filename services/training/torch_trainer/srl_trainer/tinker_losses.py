"""Tinker's built-in losses (docs/tinker-losses.md), for AdapterCommand's FORWARD and
FORWARD_BACKWARD, on flat per-position tensors as losses.py has them: the datums' positions
concatenated, `seq_ids` saying which datum each position belongs to.

Every loss is a SUM of per-position terms (Tinker's backend: "L = sum(-logprobs * weights)" for
cross_entropy, and the client-side custom loss relies on it), never a mean: the elementwise loss
is returned per position and the caller adds it up across packs, datums and calls. `logprobs` below
is always the learner's log-probability of the target token; the input named "logprobs" is the
sampler's (q).

Inputs and settings are validated here, each error naming the field, before anything is computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import torch

from .errors import InputError

_CLIP_DEFAULTS = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
_CLIP_INPUTS = ("clip_low_threshold", "clip_high_threshold")


@dataclass(frozen=True)
class LossSpec:
    required: tuple[str, ...]  # per-position inputs that must be sent
    optional: tuple[str, ...] = ()  # per-position inputs that may be sent
    # loss_fn_config keys and their defaults; None: the key must be sent.
    config: Mapping[str, float | None] = field(default_factory=dict)


SPECS: dict[str, LossSpec] = {
    "cross_entropy": LossSpec(("weights",)),
    "importance_sampling": LossSpec(("logprobs", "advantages"), ("weights",)),
    "ppo": LossSpec(("logprobs", "advantages"), ("weights", *_CLIP_INPUTS), _CLIP_DEFAULTS),
    "cispo": LossSpec(("logprobs", "advantages"), ("weights", *_CLIP_INPUTS), _CLIP_DEFAULTS),
    # Tinker documents no default beta (its example sets 0.05): it must be sent.
    "dro": LossSpec(("logprobs", "advantages"), ("weights",), {"beta": None}),
    "gspo": LossSpec(("logprobs", "advantages", "sequence_ratio_mask"), ("weights", *_CLIP_INPUTS), _CLIP_DEFAULTS),
    "stable_reinforce": LossSpec(("logprobs", "advantages"), ("weights",), {"kl_coeff": 0.0}),
}


def resolve_config(loss_fn: str, config: Mapping[str, float], text: Mapping[str, str]) -> dict[str, float]:
    """The loss's settings, each from loss_fn_config or its default."""
    spec = SPECS.get(loss_fn)
    if spec is None:
        raise InputError(f"loss_fn {loss_fn!r} is not one of {', '.join(SPECS)}")
    if text:
        raise InputError(f"loss_fn_config_text: {loss_fn} has no text settings (got {', '.join(sorted(text))})")
    unknown = sorted(set(config) - set(spec.config))
    if unknown:
        known = ", ".join(spec.config) or "none"
        raise InputError(f"loss_fn_config.{unknown[0]} is not a setting of {loss_fn} (its settings: {known})")
    values: dict[str, float] = {}
    for key, default in spec.config.items():
        value = config.get(key, default)
        if value is None:
            raise InputError(f"loss_fn_config.{key} is required by {loss_fn}")
        if not math.isfinite(value) or value < 0:
            raise InputError(f"loss_fn_config.{key} must be a finite number >= 0, got {value}")
        values[key] = float(value)
    if "clip_low_threshold" in values and values["clip_low_threshold"] > values["clip_high_threshold"]:
        raise InputError(f"loss_fn_config.clip_low_threshold ({values['clip_low_threshold']}) is above clip_high_threshold ({values['clip_high_threshold']})")
    return values


def check_inputs(loss_fn: str, index: int, length: int, inputs: Mapping[str, np.ndarray]) -> None:
    """A datum's inputs for this loss: the required ones present, none unknown, one finite value
    per position. (`index` names the datum in messages.)"""
    spec = SPECS[loss_fn]
    missing = [name for name in spec.required if name not in inputs]
    if missing:
        raise InputError(f"datum {index}: inputs[{missing[0]!r}] is required by {loss_fn}")
    allowed = set(spec.required) | set(spec.optional)
    unknown = sorted(set(inputs) - allowed)
    if unknown:
        raise InputError(f"datum {index}: inputs[{unknown[0]!r}] is not read by {loss_fn} (it reads {', '.join(sorted(allowed))})")
    for name, values in inputs.items():
        if len(values) != length:
            raise InputError(f"datum {index}: inputs[{name!r}] has {len(values)} values for {length} tokens")
        if not np.isfinite(values).all():
            raise InputError(f"datum {index}: inputs[{name!r}] holds a non-finite value")
    low, high = inputs.get("clip_low_threshold"), inputs.get("clip_high_threshold")
    if (low is not None and (low < 0).any()) or (high is not None and (high < 0).any()):
        raise InputError(f"datum {index}: inputs['clip_low_threshold'] and ['clip_high_threshold'] must be >= 0")
    if low is not None and high is not None and (low > high).any():
        raise InputError(f"datum {index}: inputs['clip_low_threshold'] is above inputs['clip_high_threshold'] at some position")


def needs_grad(loss_fn: str, config: Mapping[str, float], inputs: Mapping[str, torch.Tensor], n: int) -> torch.Tensor:
    """Per position: whether its loss term depends on the learner's log-prob (else its log-prob is
    computed outside autograd)."""
    weights = inputs.get("weights")
    device = next(iter(inputs.values())).device if inputs else None
    on = weights != 0 if weights is not None else torch.ones(n, dtype=torch.bool, device=device)
    if loss_fn in ("importance_sampling", "ppo", "cispo", "gspo"):
        return on & (inputs["advantages"] != 0)
    if loss_fn == "stable_reinforce" and config["kl_coeff"] == 0:
        return on & (inputs["advantages"] != 0)
    return on  # cross_entropy, dro (its penalty has a gradient wherever it is weighed), stable_reinforce with kl_coeff


def tinker_loss(loss_fn: str, config: Mapping[str, float], logprobs: torch.Tensor, inputs: Mapping[str, torch.Tensor], seq_ids: torch.Tensor, num_seqs: int) -> torch.Tensor:
    """The elementwise loss [N] (differentiable w.r.t. `logprobs`); the loss is its sum."""
    lp = logprobs
    if lp.dim() != 1:
        raise ValueError(f"tinker_loss expects flat [N] tensors, got logprobs of shape {tuple(lp.shape)}")
    w = inputs.get("weights")
    if loss_fn == "cross_entropy":
        return -lp * inputs["weights"]
    q = inputs["logprobs"]
    adv = inputs["advantages"]
    if loss_fn == "importance_sampling":
        per = -torch.exp(lp - q) * adv
    elif loss_fn == "ppo":
        ratio = torch.exp(lp - q)
        low, high = _clip_bounds(config, inputs, lp)
        per = -torch.minimum(ratio * adv, torch.clamp(ratio, low, high) * adv)
    elif loss_fn == "cispo":
        low, high = _clip_bounds(config, inputs, lp)
        per = -torch.clamp(torch.exp(lp - q), low, high).detach() * lp * adv
    elif loss_fn == "dro":
        per = -(lp * adv - 0.5 * config["beta"] * (lp - q) ** 2)
    elif loss_fn == "gspo":
        per = _gspo(lp, q, adv, inputs["sequence_ratio_mask"], seq_ids, num_seqs, *_clip_bounds(config, inputs, lp))
    elif loss_fn == "stable_reinforce":
        # Ours (Tinker does not publish its objective, docs/tinker-losses.md): REINFORCE with the
        # importance weight truncated at 1 as a constant coefficient, plus kl_coeff times the k2
        # estimate of the learner's drift from the sampler.
        truncated = torch.exp(lp - q).clamp(max=1.0).detach()
        per = -truncated * adv * lp + config["kl_coeff"] * 0.5 * (lp - q) ** 2
    else:
        raise InputError(f"loss_fn {loss_fn!r} is not one of {', '.join(SPECS)}")
    return per * w if w is not None else per


def _clip_bounds(config: Mapping[str, float], inputs: Mapping[str, torch.Tensor], like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per position: the datum's own threshold where sent, else the setting's."""
    low = inputs.get("clip_low_threshold")
    high = inputs.get("clip_high_threshold")
    low = low if low is not None else torch.full_like(like, config["clip_low_threshold"])
    high = high if high is not None else torch.full_like(like, config["clip_high_threshold"])
    return low.to(like.dtype), high.to(like.dtype)


def _gspo(lp: torch.Tensor, q: torch.Tensor, adv: torch.Tensor, ratio_mask: torch.Tensor, seq_ids: torch.Tensor, num_seqs: int, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """GSPO-token: every position carries its sequence's ratio s (the geometric mean of the token
    ratios over the masked positions, a constant) with the gradient of its own log-prob."""
    in_ratio = (ratio_mask != 0).to(lp.dtype)
    log_ratio = (lp.detach() - q) * in_ratio
    sums = torch.zeros(num_seqs, dtype=lp.dtype, device=lp.device).index_add(0, seq_ids, log_ratio)
    counts = torch.zeros(num_seqs, dtype=lp.dtype, device=lp.device).index_add(0, seq_ids, in_ratio)
    mean = torch.where(counts > 0, sums / counts.clamp(min=1.0), torch.zeros_like(sums))  # no masked position: s = 1
    ratio = torch.exp(mean[seq_ids] + lp - lp.detach())
    return -torch.minimum(ratio * adv, torch.clamp(ratio, low, high) * adv)
