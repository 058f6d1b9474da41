"""Small steps of the Tinker SDK's documented loops, shared by the tests (real SDK calls only).

Prompts are token ids chosen directly (the tests need no tokenizer): a made-up fact is a prompt of
ids and an answer of ids, which a byte-level model (tiny-chat) and SmolLM2 learn alike.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import tinker
from tinker import types

T = TypeVar("T")

# A made-up fact for the tiny models (byte-level vocabulary of 768: ids 10-40 are plain bytes).
FACT_PROMPT = [17, 23, 11, 29, 13, 31]
FACT_ANSWER = [37, 19, 41, 12]
# SmolLM2's tokens of "The capital of France is Paris. It is famous for the Eiffel Tower and its
# museums." (its tokenizer, read from the GGUF by transformers, once: the tests need none).
SMOLLM2_TOKENS = [504, 3575, 282, 4649, 314, 7042, 30, 657, 314, 4248, 327, 260, 414, 46682, 18669, 284, 624, 14739, 30]


def ready(client_or_future: Any) -> Any:
    """The client a create_* call gives: SDK 0.38 returns a future of it (`.result()`), 0.34 the
    client itself."""
    return client_or_future.result() if hasattr(client_or_future, "result") else client_or_future


def sft_datum(prompt: Sequence[int], answer: Sequence[int]) -> types.Datum:
    """A supervised example: input tokens[:-1], targets tokens[1:], weight 0 on the prompt's
    targets and 1 on the answer's."""
    tokens = [*prompt, *answer]
    weights = [0.0] * (len(prompt) - 1) + [1.0] * len(answer)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights},
    )


def rl_datum(
    prompt: Sequence[int],
    sampled: Sequence[int],
    sampler_logprobs: Sequence[float],
    advantage: float | Sequence[float],
) -> types.Datum:
    """A policy-gradient example as the cookbook builds it: the prompt and the sampled tokens,
    targets shifted by one, the sampler's log-probs and the advantage (one for the sequence, or one
    per sampled token) on the sampled tokens only."""
    tokens = [*prompt, *sampled]
    pad = len(prompt) - 1
    advantages = [float(advantage)] * len(sampled) if isinstance(advantage, (int, float)) else [float(a) for a in advantage]
    assert len(advantages) == len(sampled) == len(sampler_logprobs)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tokens[1:],
            "logprobs": [0.0] * pad + [float(x) for x in sampler_logprobs],
            "advantages": [0.0] * pad + advantages,
        },
    )


def output_logprobs(output: types.ForwardBackwardOutput) -> list[list[float]]:
    """The per-datum target log-probs of a forward or forward_backward."""
    return [[float(x) for x in out["logprobs"].tolist()] for out in output.loss_fn_outputs]


def weights_of(datum: types.Datum) -> list[float]:
    return [float(x) for x in datum.loss_fn_inputs["weights"].tolist()]


def mean_nll(output: types.ForwardBackwardOutput, data: Sequence[types.Datum]) -> float:
    """The weighted mean negative log-likelihood per target token (the cookbook's train_mean_nll)."""
    total = weight = 0.0
    for logprobs, datum in zip(output_logprobs(output), data, strict=True):
        w = weights_of(datum)
        assert len(logprobs) == len(w), (len(logprobs), len(w))
        total -= sum(lp * wi for lp, wi in zip(logprobs, w))
        weight += sum(w)
    return total / weight


def sft_step(training_client: tinker.TrainingClient, data: list[types.Datum], lr: float) -> float:
    """One cross-entropy forward_backward and one Adam step, submitted back to back as the SDK's docs
    do; the mean NLL before the step. Also checks the output's shape and its `loss:sum` metric."""
    fwd_bwd = training_client.forward_backward(data, "cross_entropy")
    optim = training_client.optim_step(types.AdamParams(learning_rate=lr))
    output = fwd_bwd.result()
    optim.result()
    assert len(output.loss_fn_outputs) == len(data)
    loss = mean_nll(output, data)
    weight = sum(sum(weights_of(d)) for d in data)
    assert "loss:sum" in output.metrics, output.metrics
    assert math.isclose(output.metrics["loss:sum"], loss * weight, rel_tol=1e-3, abs_tol=1e-3), (
        output.metrics,
        loss * weight,
    )
    return loss


def trainer_logprobs(training_client: tinker.TrainingClient, tokens: Sequence[int]) -> list[float]:
    """log p(tokens[i] | tokens[:i]) for i >= 1 by the trainer (a forward, no gradients)."""
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(list(tokens[:-1])),
        loss_fn_inputs={"target_tokens": list(tokens[1:]), "weights": [1.0] * (len(tokens) - 1)},
    )
    return output_logprobs(training_client.forward([datum], "cross_entropy").result())[0]


def greedy(sampling_client: tinker.SamplingClient, prompt: Sequence[int], max_tokens: int) -> list[int]:
    response = sampling_client.sample(
        types.ModelInput.from_ints(list(prompt)),
        num_samples=1,
        sampling_params=types.SamplingParams(max_tokens=max_tokens, temperature=0.0),
    ).result()
    assert len(response.sequences) == 1
    return list(response.sequences[0].tokens)


def refused(call: Callable[[], T], what: str) -> BaseException:
    """Runs `call` (which must end in `.result()` where it makes a future) and asserts the service
    refused it the way it reports another entity's things: absent (HTTP 404, or a failed future).
    Returns the error."""
    started = time.monotonic()
    try:
        value = call()
    except tinker.APIStatusError as error:
        assert error.status_code in (403, 404), f"{what}: HTTP {error.status_code}, expected 404: {error}"
        return error
    except tinker.RequestFailedError as error:
        return error
    raise AssertionError(f"{what}: allowed ({value!r} after {time.monotonic() - started:.1f} s)")
