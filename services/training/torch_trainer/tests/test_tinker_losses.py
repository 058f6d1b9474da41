"""Tests of srl_trainer.tinker_losses (docs/tinker-losses.md): each loss's elementwise values against
hand-computed ones, gradients by finite differences (float64) where the loss has no stop-gradient
and against the hand-derived gradient where it has, and every refusal naming its field."""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pytest
import torch

from srl_trainer.errors import InputError
from srl_trainer.tinker_losses import SPECS, check_inputs, needs_grad, resolve_config, tinker_loss

T = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731


def run(loss_fn: str, lp: torch.Tensor, inputs: Mapping[str, torch.Tensor], config: Mapping[str, float] | None = None, seq_ids: torch.Tensor | None = None, num_seqs: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """(elementwise loss, d sum / d lp)."""
    lp = lp.clone().requires_grad_(True)
    resolved = resolve_config(loss_fn, config or {}, {})
    ids = seq_ids if seq_ids is not None else torch.zeros(len(lp), dtype=torch.long)
    per = tinker_loss(loss_fn, resolved, lp, inputs, ids, num_seqs)
    per.sum().backward()
    assert lp.grad is not None
    return per.detach(), lp.grad


def finite_difference(loss_fn: str, lp: torch.Tensor, inputs: Mapping[str, torch.Tensor], config: Mapping[str, float] | None = None, h: float = 1e-6) -> torch.Tensor:
    resolved = resolve_config(loss_fn, config or {}, {})
    ids = torch.zeros(len(lp), dtype=torch.long)
    grad = torch.zeros_like(lp)
    for i in range(len(lp)):
        up, down = lp.clone(), lp.clone()
        up[i] += h
        down[i] -= h
        grad[i] = (tinker_loss(loss_fn, resolved, up, inputs, ids, 1).sum() - tinker_loss(loss_fn, resolved, down, inputs, ids, 1).sum()) / (2 * h)
    return grad


def close(actual: torch.Tensor, expected: list[float] | torch.Tensor) -> None:
    torch.testing.assert_close(actual, torch.as_tensor(expected, dtype=torch.float64), rtol=1e-9, atol=1e-9)


# --- the losses ----------------------------------------------------------------------------------


def test_cross_entropy_is_the_weighted_sum_of_negative_logprobs() -> None:
    lp = T(-1.0, -2.0, -0.5)
    per, grad = run("cross_entropy", lp, {"weights": T(0.0, 1.0, 2.0)})
    close(per, [0.0, 2.0, 1.0])
    assert float(per.sum()) == 3.0  # a sum, not a mean
    close(grad, [0.0, -1.0, -2.0])
    close(grad, finite_difference("cross_entropy", lp, {"weights": T(0.0, 1.0, 2.0)}))


def test_importance_sampling() -> None:
    lp, q, adv = T(-1.0, -2.0, -0.3), T(-1.5, -2.0, -0.1), T(2.0, -1.0, 0.0)
    inputs = {"logprobs": q, "advantages": adv}
    per, grad = run("importance_sampling", lp, inputs)
    close(per, [-2 * math.exp(0.5), 1.0, 0.0])
    close(grad, per)  # d(-exp(lp - q) A)/dlp = -exp(lp - q) A
    close(grad, finite_difference("importance_sampling", lp, inputs))
    # weights multiply each position's term
    per_w, _ = run("importance_sampling", lp, {**inputs, "weights": T(0.5, 0.0, 1.0)})
    close(per_w, [-math.exp(0.5), 0.0, 0.0])


def test_ppo_clips_the_ratio_the_conservative_way() -> None:
    # ratios e^0.5 (above 1.2), e^-0.5 (below 0.8), 1.1 (inside), e^0.5 with A < 0 (unclipped side)
    q = T(-1.0, -1.0, -1.0, -1.0)
    lp = q + T(0.5, -0.5, math.log(1.1), 0.5)
    adv = T(1.0, -2.0, 3.0, -1.0)
    inputs = {"logprobs": q, "advantages": adv}
    per, grad = run("ppo", lp, inputs)
    close(per, [-1.2, 2 * 0.8, -3 * 1.1, math.exp(0.5)])
    close(grad, [0.0, 0.0, -3 * 1.1, math.exp(0.5)])
    close(grad, finite_difference("ppo", lp, inputs))
    # custom thresholds, from the config and per position (the position's own wins)
    per, _ = run("ppo", lp, inputs, {"clip_low_threshold": 0.5, "clip_high_threshold": 1.5})
    close(per, [-1.5, 2 * math.exp(-0.5), -3 * 1.1, math.exp(0.5)])
    per, _ = run("ppo", lp, {**inputs, "clip_high_threshold": T(1.3, 1.2, 1.2, 1.2)})
    close(per[0], -1.3)


def test_cispo_weighs_the_logprob_by_the_clipped_ratio_as_a_constant() -> None:
    q = T(-1.0, -1.0, -2.0)
    lp = q + T(0.5, -0.5, 0.0)
    adv = T(1.0, 1.0, -2.0)
    per, grad = run("cispo", lp, {"logprobs": q, "advantages": adv})
    clipped = [1.2, 0.8, 1.0]
    close(per, [-c * l * a for c, l, a in zip(clipped, lp.tolist(), adv.tolist())])
    close(grad, [-c * a for c, a in zip(clipped, adv.tolist())])  # sg(clip(ratio)): no gradient through it


def test_dro_adds_a_quadratic_penalty_on_the_log_ratio() -> None:
    lp, q, adv = T(-1.0, -2.0), T(-1.5, -2.5), T(1.0, -1.0)
    inputs = {"logprobs": q, "advantages": adv}
    per, grad = run("dro", lp, inputs, {"beta": 0.1})
    close(per, [-(-1.0 * 1.0 - 0.05 * 0.25), -(-2.0 * -1.0 - 0.05 * 0.25)])
    close(grad, [-1.0 + 0.1 * 0.5, 1.0 + 0.1 * 0.5])
    close(grad, finite_difference("dro", lp, inputs, {"beta": 0.1}))


def test_gspo_carries_the_sequence_ratio_with_each_tokens_own_gradient() -> None:
    # Two sequences: positions 0-2 (ratio over 1 and 2; position 0 is a prompt position, unmasked),
    # positions 3-4 (ratio over both).
    q = T(0.0, -1.0, -1.0, -2.0, -2.0)
    lp = T(-3.0, -0.9, -1.2, -1.9, -1.7)
    adv = T(0.0, 1.0, 1.0, -1.0, -1.0)
    mask = T(0.0, 1.0, 1.0, 1.0, 1.0)
    ids = torch.tensor([0, 0, 0, 1, 1])
    per, grad = run("gspo", lp, {"logprobs": q, "advantages": adv, "sequence_ratio_mask": mask}, seq_ids=ids, num_seqs=2)
    s0 = math.exp(((-0.9 + 1.0) + (-1.2 + 1.0)) / 2)  # 0.951..., inside [0.8, 1.2]
    s1 = math.exp(((-1.9 + 2.0) + (-1.7 + 2.0)) / 2)  # 1.221..., above 1.2
    close(per, [0.0, -s0, -s0, s1, s1])  # A < 0: the unclipped (smaller) objective
    close(grad, [0.0, -s0, -s0, s1, s1])  # d(s_t)/dlp_t = s_t
    per, grad = run("gspo", lp, {"logprobs": q, "advantages": -adv, "sequence_ratio_mask": mask}, seq_ids=ids, num_seqs=2)
    close(per, [0.0, s0, s0, -1.2, -1.2])
    close(grad[3:], [0.0, 0.0])  # clipped: no gradient
    # A sequence with no masked position has ratio 1.
    per, _ = run("gspo", lp[:2], {"logprobs": q[:2], "advantages": T(1.0, 1.0), "sequence_ratio_mask": T(0.0, 0.0)})
    close(per, [-1.0, -1.0])


def test_stable_reinforce_truncates_the_weight_and_penalises_drift() -> None:
    lp, q, adv = T(-1.0, -2.0), T(-1.5, -1.8), T(2.0, 1.0)
    inputs = {"logprobs": q, "advantages": adv}
    per, grad = run("stable_reinforce", lp, inputs, {"kl_coeff": 0.2})
    w = [1.0, math.exp(-0.2)]  # min(ratio, 1)
    close(per, [-w[0] * 2 * -1.0 + 0.1 * 0.25, -w[1] * 1 * -2.0 + 0.1 * 0.04])
    close(grad, [-w[0] * 2 + 0.2 * 0.5, -w[1] * 1 + 0.2 * -0.2])
    per, _ = run("stable_reinforce", lp, inputs)  # kl_coeff 0 by default
    close(per, [2.0, 2 * math.exp(-0.2)])


def test_which_positions_need_a_gradient() -> None:
    inputs = {"logprobs": T(0, 0, 0), "advantages": T(0, 1, 1), "weights": T(1, 0, 1)}
    assert needs_grad("ppo", resolve_config("ppo", {}, {}), inputs, 3).tolist() == [False, False, True]
    assert needs_grad("dro", {"beta": 1.0}, inputs, 3).tolist() == [True, False, True]
    assert needs_grad("cross_entropy", {}, {"weights": T(0, 2, 0)}, 3).tolist() == [False, True, False]
    assert needs_grad("stable_reinforce", {"kl_coeff": 0.0}, {"logprobs": T(0), "advantages": T(0)}, 1).tolist() == [False]
    assert needs_grad("stable_reinforce", {"kl_coeff": 0.1}, {"logprobs": T(0), "advantages": T(0)}, 1).tolist() == [True]


# --- settings and inputs -------------------------------------------------------------------------


def test_settings_take_their_defaults_and_refuse_the_unknown() -> None:
    assert resolve_config("ppo", {}, {}) == {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    assert resolve_config("cispo", {"clip_high_threshold": 5.0}, {}) == {"clip_low_threshold": 0.8, "clip_high_threshold": 5.0}
    assert resolve_config("stable_reinforce", {}, {}) == {"kl_coeff": 0.0}
    assert resolve_config("cross_entropy", {}, {}) == {}
    cases = [
        (("sft", {}, {}), "loss_fn 'sft' is not one of cross_entropy"),
        (("ppo", {"clip_ratio": 0.2}, {}), "loss_fn_config.clip_ratio is not a setting of ppo"),
        (("cross_entropy", {"beta": 1.0}, {}), "loss_fn_config.beta is not a setting of cross_entropy (its settings: none)"),
        (("dro", {}, {}), "loss_fn_config.beta is required by dro"),
        (("dro", {"beta": math.nan}, {}), "loss_fn_config.beta must be a finite number"),
        (("ppo", {"clip_low_threshold": -1.0}, {}), "loss_fn_config.clip_low_threshold must be a finite number >= 0"),
        (("ppo", {"clip_low_threshold": 1.5}, {}), "clip_low_threshold (1.5) is above clip_high_threshold"),
        (("ppo", {}, {"mode": "x"}), "loss_fn_config_text: ppo has no text settings"),
    ]
    for args, message in cases:
        with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            resolve_config(*args)


def test_inputs_are_checked_per_datum() -> None:
    ok = {"logprobs": np.zeros(3, np.float32), "advantages": np.ones(3, np.float32)}
    check_inputs("ppo", 0, 3, ok)
    check_inputs("ppo", 0, 3, {**ok, "weights": np.ones(3, np.float32), "clip_low_threshold": np.full(3, 0.5, np.float32)})
    cases = [
        ("importance_sampling", {"advantages": ok["advantages"]}, "datum 4: inputs\\['logprobs'\\] is required by importance_sampling"),
        ("cross_entropy", {}, "inputs\\['weights'\\] is required by cross_entropy"),
        ("gspo", ok, "inputs\\['sequence_ratio_mask'\\] is required by gspo"),
        ("ppo", {**ok, "mask": np.ones(3, np.float32)}, "inputs\\['mask'\\] is not read by ppo"),
        ("cross_entropy", {"weights": np.ones(2, np.float32)}, "inputs\\['weights'\\] has 2 values for 3 tokens"),
        ("ppo", {**ok, "advantages": np.array([1, np.inf, 0], np.float32)}, "inputs\\['advantages'\\] holds a non-finite value"),
        ("ppo", {**ok, "clip_low_threshold": np.full(3, 2.0, np.float32), "clip_high_threshold": np.ones(3, np.float32)}, "clip_low_threshold'\\] is above"),
    ]
    for loss_fn, inputs, message in cases:
        with pytest.raises(InputError, match=message):
            check_inputs(loss_fn, 4, 3, inputs)


def test_every_loss_is_a_sum_over_positions_and_datums() -> None:
    """Splitting the positions in two and adding the halves gives the whole (what lets packs,
    datums and calls add up) for every loss but GSPO, whose ratio is per datum."""
    torch.manual_seed(0)
    lp = -torch.rand(6, dtype=torch.float64) * 3
    inputs = {"logprobs": -torch.rand(6, dtype=torch.float64) * 3, "advantages": torch.randn(6, dtype=torch.float64), "weights": torch.rand(6, dtype=torch.float64)}
    for loss_fn, spec in SPECS.items():
        if loss_fn == "gspo":
            continue
        config = resolve_config(loss_fn, {"beta": 0.3} if loss_fn == "dro" else {}, {})
        used = {k: v for k, v in inputs.items() if k in spec.required or k in spec.optional}
        ids = torch.zeros(6, dtype=torch.long)
        whole = tinker_loss(loss_fn, config, lp, used, ids, 1).sum()
        halves = sum(tinker_loss(loss_fn, config, lp[s], {k: v[s] for k, v in used.items()}, ids[s], 1).sum() for s in (slice(0, 3), slice(3, 6)))
        torch.testing.assert_close(whole, halves)
