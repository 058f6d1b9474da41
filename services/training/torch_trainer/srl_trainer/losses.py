"""RL and SFT losses of the trainer (spec training-semantics.md §4.2 and §7.3).

The trainer computes log-probs only at the positions whose target token is trained and packs rows
into one flat sequence, so every per-position input is a flat [N] tensor and `row_ids` says which
row each position belongs to. Per-row quantities (sequence-level ratio, KL k̄, row-mean reduction)
are segment sums over `row_ids` (index_add, differentiable).

Stop-gradients (spec sg(·)) are `.detach()`. Every input is sanitised with torch.where at
untrained positions (mask 0) before any arithmetic, so a non-finite value there can reach neither
the loss nor its gradient (an untrained position gets exactly zero gradient).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import torch

LossFn = Literal["cispo", "ppo"]
ImportanceSamplingLevel = Literal["token", "sequence", "average", "geometric_average"]
KlPenaltySource = Literal["current_learner", "sample"]
Reduction = Literal["row-mean", "token-mean"]

# Added to Σm in every mean, as ART's Unsloth loss does (spec §4.2 step 12).
_EPS = 1e-18
# ART 0.5.23 (art/loss.py loss_fn) bounds log ρ before exp: ±10 in float16 (exp(20) overflows
# there), ±20 otherwise, for the token and the sequence ratio alike.
_LOG_RATIO_BOUND = 20.0
_LOG_RATIO_BOUND_FP16 = 10.0


@dataclass(frozen=True)
class RlLossConfig:
    """The §4.4 loss knobs, resolved: the fields of the contract's RlLoss of the same names, whose
    defaults the service and the contract apply (job.rl_config), never this module."""

    loss_fn: LossFn
    epsilon: float
    epsilon_high: float
    importance_sampling_level: ImportanceSamplingLevel
    max_negative_advantage_importance_sampling_weight: float  # 0 = off
    mask_prob_ratio: bool
    kimi_k2_tau: float  # 0 = off
    truncated_importance_sampling: float  # 0 = off
    kl_penalty_coef: float
    kl_penalty_source: KlPenaltySource


@dataclass
class RlLossResult:
    loss: torch.Tensor  # scalar, differentiable w.r.t. new_logprobs
    entropy: Optional[torch.Tensor]  # scalar metric (detached) when entropy was given
    kl_policy_ref: Optional[torch.Tensor]  # scalar metric (detached) when the KL penalty is active


@dataclass(frozen=True)
class _Rows:
    """Row bookkeeping of a flat batch: segment sums and per-row trainable counts."""

    ids: torch.Tensor  # [N] int64
    num_rows: int
    count: torch.Tensor  # [R] Σm per row

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        """[N] -> [R]: Σ over each row's positions (differentiable)."""
        return torch.zeros(self.num_rows, dtype=x.dtype, device=x.device).index_add(0, self.ids, x)

    def mean_over_live(self, per_row: torch.Tensor) -> torch.Tensor:
        """[R] -> scalar: mean over the rows with trainable positions (TS reduceRows); /1 if none."""
        live = (self.count > 0).to(per_row.dtype)
        return (per_row * live).sum() / live.sum().clamp(min=1.0)


def rl_loss(
    new_logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    row_ids: torch.Tensor,
    num_rows: int,
    config: RlLossConfig,
    *,
    original_logprobs: Optional[torch.Tensor] = None,
    ref_logprobs: Optional[torch.Tensor] = None,
    entropy: Optional[torch.Tensor] = None,
    reduction: Reduction = "row-mean",
) -> RlLossResult:
    """ART's per-token RL objective (spec §4.2 steps 2-12) over flat [N] per-position tensors.

    old/original log-probs may be NaN (missing -> sg(new), ratio 1). `advantages` and `weights` are
    per position (the row's value repeated). Step 1 (probs_corr, a diagnostic) is not computed.
    """
    _check_inputs(new_logprobs, old_logprobs, advantages, weights, mask, row_ids, original_logprobs, ref_logprobs, entropy)
    on = mask > 0
    m = torch.where(on, mask, torch.zeros_like(mask))
    rows = _Rows(row_ids, num_rows, torch.zeros(num_rows, dtype=m.dtype, device=m.device).index_add(0, row_ids, m))
    # Untrained positions: new = 0 (so exactly zero gradient there), A = w = 0.
    new = _where_on(on, new_logprobs, 0.0)
    sg_new = new.detach()
    adv = _where_on(on, advantages, 0.0)
    w = _where_on(on, weights, 0.0)

    # Step 2: a missing, non-finite (ART 0.5.23: ~isfinite) or untrained old log-prob is sg(new):
    # ratio 1, no IS effect.
    old = _finite_or(on, old_logprobs, sg_new)
    # Step 3.
    delta = new - old
    # Steps 4-7.
    rho = _importance_ratio(delta, m, rows, config)
    lo = 1.0 - config.epsilon
    hi = 1.0 + config.epsilon_high

    # Step 8: Kimi K2's advantage correction (its δ is a constant).
    if config.kimi_k2_tau:
        adv = adv - config.kimi_k2_tau * delta.detach()
    # Step 9: KL-penalised advantage, per row.
    kl_policy_ref: Optional[torch.Tensor] = None
    if config.kl_penalty_coef > 0 and ref_logprobs is not None:
        source = old.detach() if config.kl_penalty_source == "sample" else sg_new
        k = (source - _where_on(on, ref_logprobs, 0.0)) * m
        k_bar = rows.sum(k) / (rows.count + _EPS)  # [R]
        adv = adv + config.kl_penalty_coef * (k_bar[row_ids] - k) * m
        kl_policy_ref = rows.mean_over_live(k_bar).detach()

    # Step 10: the policy term.
    if config.loss_fn == "ppo":
        per_token = -torch.minimum(rho * adv, rho.clamp(lo, hi) * adv)
    else:
        per_token = -rho.detach().clamp(lo, hi) * adv * new
    # Step 11: truncated importance sampling, a constant factor: recomputed-old over sampler. ART
    # 0.5.23 applies it only with the sampler's log-probs kept (precalculate_logprobs) and skips it
    # otherwise; the service refuses that combination (rl/config.ts), so here it cannot be asked.
    if config.truncated_importance_sampling:
        if original_logprobs is None:
            raise ValueError("truncated_importance_sampling needs the sampler's log-probs (precalculate_logprobs)")
        q = torch.exp(old - _present_or(on, original_logprobs, sg_new))
        per_token = per_token * q.detach().clamp(max=config.truncated_importance_sampling)

    # Step 12: ℓ·w·m, then the reduction.
    loss = _reduce(per_token * w * m, m, rows, reduction)
    entropy_metric: Optional[torch.Tensor] = None
    if entropy is not None:
        entropy_metric = _reduce(_where_on(on, entropy.detach(), 0.0) * w.detach() * m, m, rows, reduction)
    return RlLossResult(loss=loss, entropy=entropy_metric, kl_policy_ref=kl_policy_ref)


def sft_loss(new_logprobs: torch.Tensor, mask: torch.Tensor, num_label_tokens: int) -> torch.Tensor:
    """-(sum of new_logprobs * mask) / num_label_tokens (spec §7.3: token-mean CE over the whole
    optimizer step, so micro-batches' losses add up). num_label_tokens >= 1."""
    if num_label_tokens < 1:
        raise ValueError(f"num_label_tokens must be >= 1, got {num_label_tokens}")
    if new_logprobs.shape != mask.shape:
        raise ValueError(f"sft_loss: new_logprobs {tuple(new_logprobs.shape)} and mask {tuple(mask.shape)} differ in shape")
    # where first, so a -inf log-prob on an unlabelled position cannot make 0·inf = NaN.
    labelled = _where_on(mask > 0, new_logprobs, 0.0)
    return -(labelled * mask).sum() / num_label_tokens


def _importance_ratio(delta: torch.Tensor, m: torch.Tensor, rows: _Rows, config: RlLossConfig) -> torch.Tensor:
    """Spec §4.2 steps 4, 6, 7: ρ per position (differentiable through δ)."""
    level = config.importance_sampling_level
    bound = _LOG_RATIO_BOUND_FP16 if delta.dtype == torch.float16 else _LOG_RATIO_BOUND
    token_ratio = torch.exp(delta.clamp(-bound, bound))
    if level == "token":
        rho = token_ratio
    else:
        # s = exp(mean δ over the row's trainable positions); the gradient flows through the mean.
        seq_per_row = torch.exp((rows.sum(delta * m) / rows.count.clamp(min=1.0)).clamp(-bound, bound))
        s = seq_per_row[rows.ids]
        if level == "sequence":
            rho = s
        elif level == "average":
            rho = (token_ratio + s) * 0.5
        elif level == "geometric_average":
            rho = torch.sqrt(token_ratio) * torch.sqrt(s)
        else:
            raise ValueError(f"unknown importance_sampling_level {level!r}")
    # Step 6: clamps every token, whatever the sign of A (spec §12.5).
    cap = config.max_negative_advantage_importance_sampling_weight
    if cap:
        rho = rho.clamp(max=cap)
    # Step 7: ratios outside the open interval (1 - ε, 1 + ε_high) become the constant 0.
    if config.mask_prob_ratio:
        lo, hi = 1.0 - config.epsilon, 1.0 + config.epsilon_high
        rho = torch.where((rho > lo) & (rho < hi), rho, torch.zeros_like(rho))
    return rho


def _reduce(x: torch.Tensor, m: torch.Tensor, rows: _Rows, reduction: Reduction) -> torch.Tensor:
    """Σ x / (Σ m + 1e-18) over all positions (token-mean), or per row then averaged over live rows."""
    if reduction == "token-mean":
        return x.sum() / (m.sum() + _EPS)
    if reduction == "row-mean":
        return rows.mean_over_live(rows.sum(x) / (rows.count + _EPS))
    raise ValueError(f"unknown reduction {reduction!r}")


def _where_on(on: torch.Tensor, x: torch.Tensor, fill: float) -> torch.Tensor:
    """x on trained positions, `fill` elsewhere (before any arithmetic touches x)."""
    return torch.where(on, x, torch.full_like(x, fill))


def _finite_or(on: torch.Tensor, x: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """x where trained and finite, else `fallback` (ART 0.5.23: a non-finite old log-prob is sg(new))."""
    return torch.where(on & torch.isfinite(x), x, fallback)


def _present_or(on: torch.Tensor, x: Optional[torch.Tensor], fallback: torch.Tensor) -> torch.Tensor:
    """x where trained and not NaN, else `fallback` (spec: a missing log-prob is sg(new))."""
    if x is None:
        return fallback
    return torch.where(on & ~torch.isnan(x), x, fallback)


def _check_inputs(new_logprobs: torch.Tensor, *others: Optional[torch.Tensor]) -> None:
    """Every per-position tensor is 1-D with the same length (a shape bug would otherwise broadcast)."""
    if new_logprobs.dim() != 1:
        raise ValueError(f"rl_loss expects flat [N] tensors, got new_logprobs of shape {tuple(new_logprobs.shape)}")
    for t in others:
        if t is not None and t.shape != new_logprobs.shape:
            raise ValueError(f"rl_loss: a per-position tensor has shape {tuple(t.shape)}, expected {tuple(new_logprobs.shape)}")
