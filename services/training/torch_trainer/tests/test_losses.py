"""Tests of srl_trainer.losses, ported from services/training/trainer/rl/loss.test.ts (hand-computed
values) and loss-grad.test.ts (finite-difference gradients against a float64 reference).

The TS tests use [R, T] grids; the torch loss takes flat per-position tensors, so `flatten` turns a
grid case into the packed layout (rows concatenated, row_ids accordingly). `reference_loss` is an
independent plain-Python float64 port of reference-loss.ts, written straight from spec §4.2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

import pytest
import torch

from srl_trainer import proto
from srl_trainer.job import rl_config
from srl_trainer.losses import Reduction, RlLossConfig, RlLossResult, rl_loss, sft_loss

Grid = Sequence[Sequence[Optional[float]]]

pb, _ = proto.load()
# What the worker sends for resolveRlConfig({}) and ({loss_fn: "ppo"}): the clip range it resolves
# (it depends on loss_fn), every other setting left to the contract's defaults.
CISPO = rl_config(pb.RlLoss(epsilon=1.0, epsilon_high=4.0))
PPO = rl_config(pb.RlLoss(loss_fn="ppo", epsilon=0.2, epsilon_high=0.2))


def test_unset_loss_settings_take_the_contracts_defaults() -> None:
    off = dict(max_negative_advantage_importance_sampling_weight=0.0, mask_prob_ratio=False, kimi_k2_tau=0.0, truncated_importance_sampling=0.0, kl_penalty_coef=0.0)
    assert CISPO == RlLossConfig(loss_fn="cispo", epsilon=1.0, epsilon_high=4.0, importance_sampling_level="token", kl_penalty_source="current_learner", **off)
    assert rl_config(pb.RlLoss(loss_fn="ppo", importance_sampling_level="sequence", kl_penalty_source="sample", kimi_k2_tau=0.5)) == RlLossConfig(
        loss_fn="ppo", epsilon=0.0, epsilon_high=0.0, importance_sampling_level="sequence", kl_penalty_source="sample", **{**off, "kimi_k2_tau": 0.5}
    )


@dataclass(frozen=True)
class Inputs:
    """One loss case in the TS tests' grid layout: R rows of T positions, per-row A and w."""

    new: Grid
    old: Grid  # None or NaN = missing
    advantages: Sequence[float]
    weights: Sequence[float]
    mask: Grid
    detached_new: Optional[Grid] = None  # the reference's sg(·) inputs (= new by default)
    original: Optional[Grid] = None
    ref: Optional[Grid] = None
    entropy: Optional[Grid] = None


@dataclass(frozen=True)
class Flat:
    new: torch.Tensor
    old: torch.Tensor
    advantages: torch.Tensor
    weights: torch.Tensor
    mask: torch.Tensor
    row_ids: torch.Tensor
    num_rows: int
    original: Optional[torch.Tensor] = None
    ref: Optional[torch.Tensor] = None
    entropy: Optional[torch.Tensor] = None
    # position index in the flat layout -> (row, t) in the grid
    where: list[tuple[int, int]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Float64 reference (port of reference-loss.ts).


@dataclass(frozen=True)
class RefResult:
    loss: float
    kl_policy_ref: Optional[float]
    entropy: Optional[float]


def _present(v: Optional[float]) -> bool:
    return v is not None and not math.isnan(v)


def _finite(v: Optional[float]) -> bool:
    return v is not None and math.isfinite(v)


def _clip(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


# ART 0.5.23 bounds log ρ at ±20 before exp (float32/64).
LOG_RATIO_BOUND = 20.0


def reference_loss(x: Inputs, c: RlLossConfig, reduction: Reduction = "row-mean") -> RefResult:
    """Spec §4.2 in plain float64 Python. Every sg(·) is computed from `x.detached_new`, so a finite
    difference that moves only `x.new` measures the gradient autograd computes."""
    lo, hi = 1.0 - c.epsilon, 1.0 + c.epsilon_high
    rows = []
    for r, lp_new in enumerate(x.new):
        lp_sg = x.detached_new[r] if x.detached_new is not None else lp_new
        m = x.mask[r]
        n = len(lp_new)
        count = sum(m)
        # Step 2 (and untrained positions, which cannot affect the loss): a missing or non-finite
        # old log-prob is sg(new).
        old = [x.old[r][t] if m[t] > 0 and _finite(x.old[r][t]) else lp_sg[t] for t in range(n)]

        def rho_of(lp: Sequence[float]) -> list[float]:
            # Steps 3-7.
            d = [lp[t] - old[t] for t in range(n)]
            s = math.exp(_clip(sum(d[t] * m[t] for t in range(n)) / count if count > 0 else 0.0, -LOG_RATIO_BOUND, LOG_RATIO_BOUND))
            out = []
            for dt in d:
                rt = math.exp(_clip(dt, -LOG_RATIO_BOUND, LOG_RATIO_BOUND))
                rho = {"token": rt, "sequence": s, "average": (rt + s) / 2, "geometric_average": math.sqrt(rt) * math.sqrt(s)}[
                    c.importance_sampling_level
                ]
                if c.max_negative_advantage_importance_sampling_weight:
                    rho = min(rho, c.max_negative_advantage_importance_sampling_weight)
                if c.mask_prob_ratio:
                    rho = rho if lo < rho < hi else 0.0
                out.append(rho)
            return out

        rho = rho_of(lp_new)
        rho_sg = rho_of(lp_sg)
        # Steps 8-9: every input of the advantage is a stop-gradient.
        adv = [x.advantages[r] - (c.kimi_k2_tau * (lp_sg[t] - old[t]) if c.kimi_k2_tau else 0.0) for t in range(n)]
        k_bar: Optional[float] = None
        if c.kl_penalty_coef > 0 and x.ref is not None:
            src = old if c.kl_penalty_source == "sample" else lp_sg
            k = [(src[t] - (x.ref[r][t] if m[t] > 0 else 0.0)) * m[t] for t in range(n)]
            k_bar = sum(k) / (count + 1e-18)
            adv = [adv[t] + c.kl_penalty_coef * (k_bar - k[t]) * m[t] for t in range(n)]
        total = 0.0
        entropy = 0.0
        for t in range(n):
            # Step 10.
            if c.loss_fn == "ppo":
                loss_t = -min(rho[t] * adv[t], _clip(rho[t], lo, hi) * adv[t])
            else:
                loss_t = -_clip(rho_sg[t], lo, hi) * adv[t] * lp_new[t]
            # Step 11 (ART 0.5.23: only with the sampler's log-probs kept as `original`).
            if c.truncated_importance_sampling and x.original is not None:
                orig = x.original[r][t]
                q = math.exp(old[t] - (orig if m[t] > 0 and _present(orig) else lp_sg[t]))
                loss_t *= min(q, c.truncated_importance_sampling)
            # Step 12.
            total += loss_t * x.weights[r] * m[t]
            if x.entropy is not None and m[t] > 0:
                entropy += x.entropy[r][t] * x.weights[r] * m[t]
        rows.append({"sum": total, "count": count, "k_bar": k_bar, "entropy": entropy})

    live = [row for row in rows if row["count"] > 0]

    def mean_live(f: Callable[[dict], float]) -> float:
        return sum(f(row) for row in live) / max(len(live), 1)

    def reduce(key: str) -> float:
        if reduction == "token-mean":
            return sum(row[key] for row in rows) / (sum(row["count"] for row in rows) + 1e-18)
        return mean_live(lambda row: row[key] / (row["count"] + 1e-18))

    kl = mean_live(lambda row: row["k_bar"] or 0.0) if any(row["k_bar"] is not None for row in rows) else None
    return RefResult(loss=reduce("sum"), kl_policy_ref=kl, entropy=reduce("entropy") if x.entropy is not None else None)


# ---------------------------------------------------------------------------------------------
# Grid -> flat layout, and running the torch loss.


def flatten(x: Inputs, order: Optional[Sequence[tuple[int, int]]] = None, row_label: Optional[Sequence[int]] = None) -> Flat:
    """The packed layout of a grid case: by default row 0's positions, then row 1's, ...
    `order` lists (row, t) in any order (a different packing); `row_label[r]` renames row r."""
    if order is None:
        order = [(r, t) for r, row in enumerate(x.new) for t in range(len(row))]
    label = list(row_label) if row_label is not None else list(range(len(x.new)))

    def pick(grid: Grid) -> torch.Tensor:
        return torch.tensor([math.nan if grid[r][t] is None else grid[r][t] for r, t in order], dtype=torch.float64)

    def per_row(values: Sequence[float]) -> torch.Tensor:
        return torch.tensor([values[r] for r, _ in order], dtype=torch.float64)

    return Flat(
        new=pick(x.new),
        old=pick(x.old),
        advantages=per_row(x.advantages),
        weights=per_row(x.weights),
        mask=pick(x.mask),
        row_ids=torch.tensor([label[r] for r, _ in order], dtype=torch.int64),
        num_rows=len(x.new),
        original=pick(x.original) if x.original is not None else None,
        ref=pick(x.ref) if x.ref is not None else None,
        entropy=pick(x.entropy) if x.entropy is not None else None,
        where=list(order),
    )


def run(f: Flat, config: RlLossConfig, reduction: Reduction = "row-mean") -> tuple[RlLossResult, torch.Tensor]:
    """The torch loss and its autograd gradient w.r.t. the flat new log-probs."""
    new = f.new.clone().requires_grad_(True)
    result = rl_loss(
        new,
        f.old,
        f.advantages,
        f.weights,
        f.mask,
        f.row_ids,
        f.num_rows,
        config,
        original_logprobs=f.original,
        ref_logprobs=f.ref,
        entropy=f.entropy,
        reduction=reduction,
    )
    (grad,) = torch.autograd.grad(result.loss, new)
    return result, grad


def to_grid(f: Flat, x: Inputs, flat: torch.Tensor) -> list[list[float]]:
    out = [[math.nan] * len(row) for row in x.new]
    for i, (r, t) in enumerate(f.where):
        out[r][t] = float(flat[i])
    return out


def close(actual: float, expected: float, rel: float = 1e-12) -> bool:
    return abs(actual - expected) <= rel * max(1.0, abs(expected))


# ---------------------------------------------------------------------------------------------
# Hand-computed values (loss.test.ts). Base case: one row, 3 tokens, the first not trainable:
#   new = [-0.5, -1.0, -2.0], old = [NaN, -1.2, -1.5], mask = [0, 1, 1], A = 2, w = 1
#   δ1 = 0.2 -> r1 = e^0.2 = 1.2214028;  δ2 = -0.5 -> r2 = e^-0.5 = 0.6065307
#   s (sequence) = exp((0.2 - 0.5) / 2) = e^-0.15 = 0.8607080; reduction: (ℓ1 + ℓ2) · w / 2

BASE = Inputs(new=[[-0.5, -1.0, -2.0]], old=[[None, -1.2, -1.5]], advantages=[2.0], weights=[1.0], mask=[[0, 1, 1]])

# A second row: new = [-1, -0.5, -3], old = [-, -0.7, -], mask = [0, 1, 0], A = -1, w = 1.5
#   ℓ = -(e^0.2)·(-1)·(-0.5)·1.5 = -0.9160521 over 1 token.
TWO_ROWS = replace(
    BASE,
    new=[BASE.new[0], [-1.0, -0.5, -3.0]],
    old=[BASE.old[0], [None, -0.7, None]],
    advantages=[2.0, -1.0],
    weights=[1.0, 1.5],
    mask=[BASE.mask[0], [0, 1, 0]],
)
KL_REF = [[0.0, -1.1, -1.8]]


@dataclass(frozen=True)
class Case:
    name: str
    config: RlLossConfig
    expected: float
    inputs: Inputs = BASE
    reduction: Reduction = "row-mean"
    kl_policy_ref: Optional[float] = None


VALUE_CASES = [
    # CISPO, clip [0, 5]: (1.2214028·2·1 + 0.6065307·2·2) / 2
    Case("cispo token (defaults)", CISPO, 2.434464077585437),
    # PPO [0.8, 1.2]: ℓ1 = -min(2.4428, 2.4) = -2.4; ℓ2 = -min(1.2131, 1.6) = -1.2131; / 2
    Case("ppo token", PPO, -1.8065306597126334),
    # A = -2: ℓ1 = -min(-2.4428, -2.4) = 2.4428; ℓ2 = -min(-1.2131, -1.6) = 1.6; / 2
    Case("ppo token, negative advantage", PPO, 2.02140275816017, inputs=replace(BASE, advantages=[-2.0])),
    # ρ = s = 0.860708 on both: (0.860708·2·1 + 0.860708·2·2) / 2
    Case("cispo sequence", replace(CISPO, importance_sampling_level="sequence"), 2.5821239292751734),
    # s in [0.8, 1.2]: ℓ = -s·A on both tokens
    Case("ppo sequence", replace(PPO, importance_sampling_level="sequence"), -1.7214159528501156),
    # ρ = (r + s)/2 = [1.0410554, 0.7336193]
    Case("cispo average", replace(CISPO, importance_sampling_level="average"), 2.508294003430305),
    # ℓ1 = -2.0821; ℓ2 = -min(1.4672, 1.6) = -1.4672; / 2
    Case("ppo average", replace(PPO, importance_sampling_level="average"), -1.7746746853614592),
    # ρ = √r·√s = [e^0.025, e^-0.325]
    Case("cispo geometric_average", replace(CISPO, importance_sampling_level="geometric_average"), 2.4703698278085735),
    Case("ppo geometric_average", replace(PPO, importance_sampling_level="geometric_average"), -1.747842474166501),
    # clip [0.8, 1.1]: ρ1 -> 1.1, ρ2 -> 0.8: (2.2 + 3.2) / 2
    Case("cispo epsilon 0.2 / epsilon_high 0.1 clipping", replace(CISPO, epsilon=0.2, epsilon_high=0.1), 2.7),
    # clip [0.8, 1.3]
    Case("ppo epsilon_high 0.3", replace(PPO, epsilon_high=0.3), -1.8279334178728033),
    # range (0.5, 1.2): ρ1 = 1.2214 -> 0; ℓ1 = 0; ℓ2 = -1.2131; / 2
    Case("ppo mask_prob_ratio", replace(PPO, epsilon=0.5, epsilon_high=0.2, mask_prob_ratio=True), -0.6065306597126334),
    # range (0.5, 1.2): ρ1 -> 0, then CISPO's clip lifts it to 0.5
    Case("cispo mask_prob_ratio", replace(CISPO, epsilon=0.5, epsilon_high=0.2, mask_prob_ratio=True), 1.7130613194252668),
    # Not in the TS list: the mask_prob_ratio bounds are strict. old1 = new1 makes ρ1 = 1 exactly.
    # ε_high = 0, range (0.5, 1): ρ1 = 1 -> 0, ℓ1 = -min(0, 0.5·2) = 0; ℓ2 = -0.6065307·2; / 2
    Case(
        "ppo mask_prob_ratio, ratio on the upper bound",
        replace(PPO, epsilon=0.5, epsilon_high=0.0, mask_prob_ratio=True),
        -0.6065306597126334,
        inputs=replace(BASE, old=[[None, -1.0, -1.5]]),
    ),
    # ε = 0, range (1, 1.5): ρ1 = 1 -> 0 and ρ2 = 0.6065 -> 0: ℓ = -min(0, 1·2) = 0 on both
    Case(
        "ppo mask_prob_ratio, ratio on the lower bound",
        replace(PPO, epsilon=0.0, epsilon_high=0.5, mask_prob_ratio=True),
        0.0,
        inputs=replace(BASE, old=[[None, -1.0, -1.5]]),
    ),
    # ρ = min(ρ, 1) = [1, 0.6065307]
    Case(
        "max_negative_advantage_importance_sampling_weight 1",
        replace(CISPO, max_negative_advantage_importance_sampling_weight=1.0),
        2.213061319425267,
    ),
    # A_t = 2 - 0.5·δ_t = [1.9, 2.25]
    Case("kimi_k2_tau 0.5", replace(CISPO, kimi_k2_tau=0.5), 2.5250266046055865),
    # orig = [-, -1.0, -1.4]: q = [e^-0.2, e^-0.1] -> min(q, 0.85) = [0.8187308, 0.85]
    Case(
        "truncated_importance_sampling with precalculated logprobs",
        replace(CISPO, truncated_importance_sampling=0.85),
        2.031102121511477,
        inputs=replace(BASE, original=[[None, -1.0, -1.4]]),
    ),
    # k = new - ref = [0.1, -0.2], k̄ = -0.05, A = [1.985, 2.015]
    Case(
        "kl penalty, current_learner",
        replace(CISPO, kl_penalty_coef=0.1, kl_penalty_source="current_learner"),
        2.434401516794925,
        inputs=replace(BASE, ref=KL_REF),
        kl_policy_ref=-0.05,
    ),
    # k = old - ref = [-0.1, 0.3], k̄ = 0.1, A = [2.02, 1.98]
    Case(
        "kl penalty, sample",
        replace(CISPO, kl_penalty_coef=0.1, kl_penalty_source="sample"),
        2.4345474919727854,
        inputs=replace(BASE, ref=KL_REF),
        kl_policy_ref=0.1,
    ),
    # old1 missing -> sg(new): ρ1 = 1
    Case("missing old logprob", CISPO, 2.213061319425267, inputs=replace(BASE, old=[[None, None, -1.5]])),
    # ART 0.5.23: a non-finite old log-prob is missing too (ρ1 = 1), not a ratio of 0 or inf.
    Case("infinite old logprob", CISPO, 2.213061319425267, inputs=replace(BASE, old=[[None, -math.inf, -1.5]])),
    # δ1 = -1 - (-40) = 39 is bounded at 20: PPO, A = -2: ℓ1 = -min(-2·e^20, -2·1.2) = 2·e^20;
    # ℓ2 = 1.6 (as in "ppo token, negative advantage"); / 2
    Case("log ratio bounded at 20", PPO, (2 * math.exp(20.0) + 1.6) / 2, inputs=replace(BASE, old=[[None, -40.0, -1.5]], advantages=[-2.0])),
    # w = 0.5 halves the base case
    Case("token weight", CISPO, 1.2172320387927185, inputs=replace(BASE, weights=[0.5])),
    # row-mean: (4.8689281 / 2 + (-0.9160521) / 1) / 2
    Case("two rows, row-mean", CISPO, 0.7592060044826547, inputs=TWO_ROWS),
    # token-mean: (4.8689281 - 0.9160521) / 3
    Case("two rows, token-mean", CISPO, 1.317625362183582, inputs=TWO_ROWS, reduction="token-mean"),
    # A row without trainable tokens does not count in the row mean.
    Case("empty row is ignored", CISPO, 2.434464077585437, inputs=replace(TWO_ROWS, mask=[BASE.mask[0], [0, 0, 0]])),
]


@pytest.mark.parametrize("case", VALUE_CASES, ids=lambda c: c.name)
def test_hand_computed_value(case: Case) -> None:
    ref = reference_loss(case.inputs, case.config, case.reduction)
    assert close(ref.loss, case.expected)
    result, _ = run(flatten(case.inputs), case.config, case.reduction)
    assert result.loss.dtype == torch.float64 and result.loss.dim() == 0
    assert close(result.loss.item(), case.expected)
    if case.kl_policy_ref is not None:
        assert ref.kl_policy_ref is not None and close(ref.kl_policy_ref, case.kl_policy_ref)
        assert result.kl_policy_ref is not None and close(result.kl_policy_ref.item(), case.kl_policy_ref)
    else:
        assert result.kl_policy_ref is None
    assert result.entropy is None


def test_entropy_metric_is_the_weighted_masked_mean() -> None:
    # Σ H·w·m / Σm = (0.5·1 + 1.5·1) · 1 / 2 = 1 (the untrained first position's 9 is ignored)
    x = replace(BASE, entropy=[[9.0, 0.5, 1.5]])
    ref = reference_loss(x, CISPO).entropy
    assert ref is not None and close(ref, 1.0)
    result, _ = run(flatten(x), CISPO)
    assert result.entropy is not None and close(result.entropy.item(), 1.0)
    assert not result.entropy.requires_grad


def test_truncated_importance_sampling_needs_the_samplers_logprobs() -> None:
    # ART 0.5.23 skips it without them; the service refuses that combination, so the loss says so.
    with pytest.raises(ValueError, match="precalculate_logprobs"):
        run(flatten(BASE), replace(CISPO, truncated_importance_sampling=1.0))


def test_non_finite_values_on_untrained_positions() -> None:
    # loss.test.ts: -1e30 old and NaN ref on the untrained position change nothing.
    x = replace(BASE, old=[[-1e30, -1.2, -1.5]], ref=[[math.nan, -1.1, -1.8]])
    config = replace(PPO, kl_penalty_coef=0.1)
    expected = reference_loss(replace(x, old=BASE.old), config).loss
    result, grad = run(flatten(x), config)
    assert close(result.loss.item(), expected)
    assert torch.isfinite(grad).all() and grad[0].item() == 0.0


@pytest.mark.parametrize("config", [replace(PPO, kl_penalty_coef=0.1, truncated_importance_sampling=1.1), replace(CISPO, kl_penalty_coef=0.1, importance_sampling_level="sequence")])
def test_any_non_finite_input_on_untrained_positions(config: RlLossConfig) -> None:
    # The flat layout has per-position A and w too: poison every input of the untrained position.
    clean = replace(BASE, ref=KL_REF, original=[[None, -1.1, -1.4]], entropy=[[0.0, 0.5, 1.5]])
    f = flatten(clean)
    poisoned = replace(
        f,
        new=torch.tensor([-math.inf, -1.0, -2.0], dtype=torch.float64),
        old=torch.tensor([math.inf, -1.2, -1.5], dtype=torch.float64),
        advantages=torch.tensor([math.nan, 2.0, 2.0], dtype=torch.float64),
        weights=torch.tensor([math.inf, 1.0, 1.0], dtype=torch.float64),
        ref=torch.tensor([math.nan, -1.1, -1.8], dtype=torch.float64),
        original=torch.tensor([-math.inf, -1.1, -1.4], dtype=torch.float64),
        entropy=torch.tensor([math.nan, 0.5, 1.5], dtype=torch.float64),
    )
    want, want_grad = run(f, config)
    got, got_grad = run(poisoned, config)
    assert close(got.loss.item(), want.loss.item())
    assert got.entropy is not None and close(got.entropy.item(), 1.0)
    assert got.kl_policy_ref is not None and want.kl_policy_ref is not None
    assert close(got.kl_policy_ref.item(), want.kl_policy_ref.item())
    assert torch.isfinite(got_grad).all() and got_grad[0].item() == 0.0
    assert torch.allclose(got_grad, want_grad, rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------------------------
# Gradients (loss-grad.test.ts). Ratios stay clear of every clip / mask boundary (0.8, 1.2, 1.3,
# 0.5), so the loss is smooth at X.

X = Inputs(
    new=[[-0.3, -1.1, -0.7, -2.2, -0.05], [-1.5, -0.4, -0.9, -1.3, -0.6]],
    old=[[None, -1.0, -0.95, -2.05, None], [None, -0.55, -0.6, -1.75, -0.62]],
    advantages=[1.3, -0.7],
    weights=[0.8, 1.2],
    mask=[[0, 1, 1, 1, 1], [0, 1, 1, 1, 0]],
)
X_ORIGINAL = [[None, -1.1, -0.9, None, -0.2], [None, -0.5, -0.7, -1.7, -0.6]]
X_REF = [[0.0, -1.3, -0.6, -2.0, -0.2], [0.0, -0.3, -1.0, -1.5, -0.5]]
UNTRAINED = [(0, 0), (1, 4)]

GRAD_CASES: list[tuple[str, RlLossConfig, Inputs]] = [
    *(
        (name, config, X)
        for level in ("token", "sequence", "average", "geometric_average")
        for name, config in (
            (f"cispo {level}", replace(CISPO, importance_sampling_level=level)),
            (f"ppo {level}", replace(PPO, importance_sampling_level=level)),
            (f"ppo {level}, epsilon_high 0.3", replace(PPO, importance_sampling_level=level, epsilon_high=0.3)),
        )
    ),
    ("cispo clipping [0.8, 1.1]", replace(CISPO, epsilon=0.2, epsilon_high=0.1), X),
    ("ppo mask_prob_ratio", replace(PPO, mask_prob_ratio=True), X),
    (
        "ppo max_negative_advantage_importance_sampling_weight",
        replace(PPO, max_negative_advantage_importance_sampling_weight=1.1),
        X,
    ),
    ("cispo kimi_k2_tau", replace(CISPO, kimi_k2_tau=0.7), X),
    ("ppo kimi_k2_tau", replace(PPO, kimi_k2_tau=0.7), X),
    ("ppo truncated_importance_sampling", replace(PPO, truncated_importance_sampling=1.1), replace(X, original=X_ORIGINAL)),
    (
        "cispo truncated IS with precalculated logprobs",
        replace(CISPO, truncated_importance_sampling=1.05),
        replace(X, original=X_ORIGINAL),
    ),
    (
        "ppo sequence with kl penalty (current_learner)",
        replace(PPO, importance_sampling_level="sequence", kl_penalty_coef=0.3),
        replace(X, ref=X_REF),
    ),
    ("cispo with kl penalty (sample)", replace(CISPO, kl_penalty_coef=0.3, kl_penalty_source="sample"), replace(X, ref=X_REF)),
    # Not in the TS list: with a token-level ratio the current_learner KL term's stop-gradient shows
    # (for a sequence-level ratio its gradient would cancel within each row).
    ("cispo with kl penalty (current_learner)", replace(CISPO, kl_penalty_coef=0.3), replace(X, ref=X_REF)),
    # The TS "traces under jit(valueAndGrad)" config.
    ("ppo geometric_average, kimi_k2_tau 0.2", replace(PPO, importance_sampling_level="geometric_average", kimi_k2_tau=0.2), X),
]


def finite_difference(x: Inputs, config: RlLossConfig, reduction: Reduction = "row-mean", h: float = 1e-6) -> list[list[float]]:
    """Central differences of the reference, its stop-gradients held at the base point."""

    def at(r: int, t: int, d: float) -> float:
        moved = [[v + d if (i, j) == (r, t) else v for j, v in enumerate(row)] for i, row in enumerate(x.new)]
        return reference_loss(replace(x, new=moved, detached_new=x.new), config, reduction).loss

    return [[(at(r, t, h) - at(r, t, -h)) / (2 * h) for t in range(len(row))] for r, row in enumerate(x.new)]


@pytest.mark.parametrize("reduction", ["row-mean", "token-mean"])
@pytest.mark.parametrize("name, config, x", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_finite_differences(name: str, config: RlLossConfig, x: Inputs, reduction: Reduction) -> None:
    f = flatten(x)
    result, grad = run(f, config, reduction)
    assert close(result.loss.item(), reference_loss(x, config, reduction).loss)
    actual = to_grid(f, x, grad)
    expected = finite_difference(x, config, reduction)
    for r, row in enumerate(expected):
        for t, e in enumerate(row):
            assert abs(actual[r][t] - e) <= 1e-7 * (1 + abs(e)), f"d/dnew[{r}][{t}]: {actual[r][t]} vs {e}"
    # Untrained positions get exactly zero gradient.
    for r, t in UNTRAINED:
        assert actual[r][t] == 0.0


@pytest.mark.parametrize("reduction", ["row-mean", "token-mean"])
@pytest.mark.parametrize("source", ["current_learner", "sample"])
def test_metrics_match_reference(reduction: Reduction, source: str) -> None:
    x = replace(X, ref=X_REF, entropy=[[7.0, 0.3, 1.2, 2.5, 0.9], [3.0, 1.1, 0.4, 2.2, 8.0]])
    config = replace(CISPO, kl_penalty_coef=0.3, kl_penalty_source=source)
    ref = reference_loss(x, config, reduction)
    result, _ = run(flatten(x), config, reduction)
    assert close(result.loss.item(), ref.loss)
    assert ref.entropy is not None and result.entropy is not None and close(result.entropy.item(), ref.entropy)
    assert ref.kl_policy_ref is not None and result.kl_policy_ref is not None
    assert close(result.kl_policy_ref.item(), ref.kl_policy_ref)


def test_kl_metric_absent_without_reference_logprobs() -> None:
    result, _ = run(flatten(X), replace(CISPO, kl_penalty_coef=0.3))
    assert result.kl_policy_ref is None
    assert close(result.loss.item(), reference_loss(X, CISPO).loss)


# ---------------------------------------------------------------------------------------------
# Packing: the positions' order in the flat sequence and the rows' numbering do not matter.

PACKING_CONFIGS = [
    replace(CISPO, importance_sampling_level="sequence", kl_penalty_coef=0.3),
    replace(PPO, importance_sampling_level="geometric_average", kl_penalty_coef=0.3, kl_penalty_source="sample", kimi_k2_tau=0.2),
    replace(CISPO, truncated_importance_sampling=1.05),
]


@pytest.mark.parametrize("reduction", ["row-mean", "token-mean"])
@pytest.mark.parametrize("config", PACKING_CONFIGS)
def test_packing_order_is_irrelevant(config: RlLossConfig, reduction: Reduction) -> None:
    x = replace(X, ref=X_REF, original=X_ORIGINAL, entropy=[[7.0, 0.3, 1.2, 2.5, 0.9], [3.0, 1.1, 0.4, 2.2, 8.0]])
    row0 = [(0, t) for t in range(5)]
    row1 = [(1, t) for t in range(5)]
    layouts = [
        flatten(x),  # row 0 then row 1
        flatten(x, order=row1 + row0, row_label=[1, 0]),  # row 1 first, renumbered as row 0
        flatten(x, order=row1 + row0),  # row 1 first, ids kept
        flatten(x, order=[p for pair in zip(row0, reversed(row1)) for p in pair]),  # interleaved
    ]
    base, base_grad = run(layouts[0], config, reduction)
    for f in layouts[1:]:
        result, grad = run(f, config, reduction)
        assert close(result.loss.item(), base.loss.item(), rel=1e-14)
        assert result.entropy is not None and base.entropy is not None
        assert close(result.entropy.item(), base.entropy.item(), rel=1e-14)
        assert (result.kl_policy_ref is None) == (base.kl_policy_ref is None) == (config.kl_penalty_coef == 0)
        if result.kl_policy_ref is not None and base.kl_policy_ref is not None:
            assert close(result.kl_policy_ref.item(), base.kl_policy_ref.item(), rel=1e-14)
        actual, expected = to_grid(f, x, grad), to_grid(layouts[0], x, base_grad)
        for r in range(2):
            for t in range(5):
                assert close(actual[r][t], expected[r][t], rel=1e-14)


# ---------------------------------------------------------------------------------------------
# dtype, shapes, SFT.


def test_float32_inputs_give_a_float32_loss() -> None:
    f = flatten(TWO_ROWS)
    f32 = replace(f, new=f.new.float(), old=f.old.float(), advantages=f.advantages.float(), weights=f.weights.float(), mask=f.mask.float())
    result, grad = run(f32, replace(PPO, importance_sampling_level="sequence"))
    assert result.loss.dtype == torch.float32 and grad.dtype == torch.float32
    assert abs(result.loss.item() - reference_loss(TWO_ROWS, replace(PPO, importance_sampling_level="sequence")).loss) < 1e-6


def test_mismatched_shapes_are_rejected() -> None:
    f = flatten(BASE)
    with pytest.raises(ValueError):
        rl_loss(f.new, f.old[:2], f.advantages, f.weights, f.mask, f.row_ids, 1, CISPO)
    with pytest.raises(ValueError):
        rl_loss(f.new.reshape(1, 3), f.old.reshape(1, 3), f.advantages, f.weights, f.mask, f.row_ids, 1, CISPO)


def test_sft_loss_hand_computed() -> None:
    # This micro-batch has 2 of the step's 4 label tokens: -(-1.0 - 2.0) / 4 = 0.75; the -inf on an
    # unlabelled position is ignored. d/dnew = -mask / 4.
    new = torch.tensor([-0.5, -1.0, -2.0, -math.inf], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([0.0, 1.0, 1.0, 0.0], dtype=torch.float64)
    loss = sft_loss(new, mask, 4)
    assert close(loss.item(), 0.75)
    loss.backward()
    assert new.grad is not None and new.grad.tolist() == [0.0, -0.25, -0.25, 0.0]
    # The other micro-batch's 2 tokens: the step's losses add up to the token-mean over all 4.
    other = sft_loss(torch.tensor([-0.1, -0.3], dtype=torch.float64), torch.tensor([1.0, 1.0], dtype=torch.float64), 4)
    assert close(loss.item() + other.item(), (1.0 + 2.0 + 0.1 + 0.3) / 4)


def test_sft_loss_needs_label_tokens() -> None:
    with pytest.raises(ValueError):
        sft_loss(torch.zeros(2), torch.zeros(2), 0)
