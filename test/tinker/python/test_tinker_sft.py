"""Supervised fine-tuning with the Tinker SDK, as its docs and the cookbook's sl_loop do: a LoRA
training client, forward_backward with cross_entropy and optim_step until a made-up fact is
learned, then save_weights_and_get_sampling_client, whose greedy sample answers it. And
forward_backward_custom (a client-side loss: a forward, the loss differentiated locally with torch,
then cross_entropy with the gradient as weights), which must agree with the built-in loss."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest
from tinker import types

from conftest import TinkerClients
from tinker_steps import FACT_ANSWER, FACT_PROMPT, greedy, mean_nll, output_logprobs, ready, sft_datum, sft_step

if TYPE_CHECKING:
    import torch

BASE = "tiny-chat"


@pytest.mark.time_limit(180)
def test_sft_teaches_a_fact_that_the_sampler_then_answers(tinker_clients: TinkerClients) -> None:
    service_client = tinker_clients.service_client()
    training_client = ready(service_client.create_lora_training_client(base_model=BASE, rank=8, seed=0))
    info = training_client.get_info()
    assert info.model_id == training_client.model_id
    assert info.is_lora and info.lora_rank == 8, info

    data = [sft_datum(FACT_PROMPT, FACT_ANSWER)]
    base_sampler = ready(service_client.create_sampling_client(base_model=BASE))
    before = greedy(base_sampler, FACT_PROMPT, len(FACT_ANSWER))
    assert before != FACT_ANSWER, "the base model already answers the made-up fact"
    scored = types.ModelInput.from_ints(list(FACT_PROMPT) + list(FACT_ANSWER))
    base_logprobs = base_sampler.compute_logprobs(scored).result()  # type: ignore[attr-defined]

    losses: list[float] = []
    for _ in range(60):
        losses.append(sft_step(training_client, data, lr=1e-2))
        if losses[-1] < 0.05:
            break
    assert losses[-1] < 0.05, f"the loss did not fall below 0.05: {[round(x, 3) for x in losses]}"
    assert losses[0] > 1.0, losses[0]

    sampler = ready(training_client.save_weights_and_get_sampling_client())
    after = greedy(sampler, FACT_PROMPT, len(FACT_ANSWER))
    assert after == FACT_ANSWER, f"greedy answer {after}, taught {FACT_ANSWER} (losses {losses[0]:.3f} -> {losses[-1]:.3f})"
    # The base model's sampler is unchanged by the training: the same log-probs of the same tokens
    # (not its greedy text again: the repeated prompt's cached prefix is evaluated in another batch
    # shape, and float sums in another order can tip a near tie of the untrained model).
    again = base_sampler.compute_logprobs(scored).result()  # type: ignore[attr-defined]
    assert len(again) == len(base_logprobs) and again[0] is None, again
    assert max(abs(a - b) for a, b in zip(again[1:], base_logprobs[1:])) < 1e-3, (again, base_logprobs)


@pytest.mark.time_limit(120)
def test_custom_loss_agrees_with_cross_entropy_and_trains(tinker_clients: TinkerClients) -> None:
    pytest.importorskip("torch")  # the SDK's `torch` extra (the environment has the trainer's)
    service_client = tinker_clients.service_client()
    training_client = ready(service_client.create_lora_training_client(base_model=BASE, rank=8, seed=1))
    data = [sft_datum(FACT_PROMPT, FACT_ANSWER), sft_datum(FACT_PROMPT[:3], FACT_ANSWER[::-1])]

    def mean_nll_loss(batch: list[types.Datum], logprobs: list[torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        # The weighted mean NLL per token: its gradient is -w / sum(w), not the datums' weights.
        total = sum(-(lp * d.loss_fn_inputs["weights"].to_torch()).sum() for d, lp in zip(batch, logprobs))
        weight = sum(float(d.loss_fn_inputs["weights"].to_torch().sum()) for d in batch)
        loss = total / weight
        return loss, {"custom_mean_nll": float(loss.detach())}

    reference = mean_nll(training_client.forward(data, "cross_entropy").result(), data)
    result = training_client.forward_backward_custom(data, mean_nll_loss).result()
    assert math.isclose(result.metrics["custom_mean_nll"], reference, rel_tol=1e-4, abs_tol=1e-5), (result.metrics, reference)
    assert math.isclose(result.metrics["loss:sum"], reference, rel_tol=1e-4, abs_tol=1e-5), result.metrics
    # The server's surrogate: cross_entropy with weights w / sum(w) gives the same number.
    assert math.isclose(result.metrics["surrogate_loss:sum"], reference, rel_tol=1e-3, abs_tol=1e-4), result.metrics
    assert len(output_logprobs(result)) == len(data)
    training_client.optim_step(types.AdamParams(learning_rate=1e-2)).result()

    losses = [reference]
    for _ in range(5):
        training_client.forward_backward_custom(data, mean_nll_loss).result()
        training_client.optim_step(types.AdamParams(learning_rate=1e-2)).result()
        losses.append(mean_nll(training_client.forward(data, "cross_entropy").result(), data))
    assert losses[-1] < losses[0] * 0.7, f"custom-loss steps did not lower the loss: {losses}"
