"""Reinforcement learning with the Tinker SDK, as the cookbook's rl_loop does it: sample groups
with log-probs from the latest sampler weights, score them with a verifiable reward, advantages =
reward - the group's mean, Datums of target tokens, the sampler's log-probs and the advantages,
one forward_backward with an RL loss and one optim_step per iteration, then new sampler weights.
The reward (the first sampled token's id is even) starts near 0.6 on the tiny model and must
rise, with each of the built-in policy losses (on-policy, one step per batch, the importance ratio
is 1 and the three agree; test_rl_losses_follow_their_definitions tells them apart off-policy).

Off-policy, the losses are the ones Tinker documents, summed over tokens, with r = exp(logp - q):
  importance_sampling  -sum(r * A)
  ppo                  -sum(min(r * A, clip(r, low, high) * A))
  cispo                -sum(sg(clip(r, low, high)) * logp * A)"""

from __future__ import annotations

import math

import pytest
from tinker import types

from conftest import TinkerClients
from tinker_steps import output_logprobs, ready, rl_datum, trainer_logprobs

BASE = "tiny-chat"
PROMPTS = [[17, 23, 11], [29, 13, 31, 15], [21, 14, 33], [19, 27, 12, 35]]
GROUP = 16
ITERATIONS = 5  # four updates
LEARNING_RATE = 1e-2  # measured: 0.59-0.62 -> 0.95-1.00 after one to two updates (seeds 0, 7, 13, 101)


def reward(tokens: list[int]) -> float:
    return 1.0 if tokens and tokens[0] % 2 == 0 else 0.0


@pytest.mark.time_limit(150)
@pytest.mark.parametrize("loss_fn", ["importance_sampling", "ppo", "cispo"])
def test_rl_raises_the_mean_reward(
    tinker_clients: TinkerClients, loss_fn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    service_client = tinker_clients.service_client()
    training_client = ready(service_client.create_lora_training_client(base_model=BASE, rank=8, seed=0))
    sampler = ready(training_client.save_weights_and_get_sampling_client())
    curve: list[float] = []
    for iteration in range(ITERATIONS):
        futures = [
            sampler.sample(
                types.ModelInput.from_ints(prompt),
                num_samples=GROUP,
                sampling_params=types.SamplingParams(max_tokens=1, temperature=1.0, seed=1000 * iteration + index),
            )
            for index, prompt in enumerate(PROMPTS)
        ]
        data: list[types.Datum] = []
        sampled: list[tuple[int, float]] = []  # (token, the sampler's log-prob) of each datum
        rewards: list[float] = []
        for prompt, future in zip(PROMPTS, futures):
            sequences = future.result().sequences
            assert len(sequences) == GROUP
            scores = [reward(list(s.tokens)) for s in sequences]
            rewards += scores
            mean = sum(scores) / len(scores)
            for sequence, score in zip(sequences, scores):
                tokens = list(sequence.tokens)
                assert 0 < len(tokens) <= 1, tokens
                assert sequence.logprobs is not None and len(sequence.logprobs) == len(tokens), sequence
                assert all(lp <= 0.0 for lp in sequence.logprobs), sequence.logprobs
                if score == mean:
                    continue  # no advantage: nothing to learn from it
                data.append(rl_datum(prompt, tokens, sequence.logprobs, score - mean))
                sampled.append((tokens[0], sequence.logprobs[0]))
        curve.append(sum(rewards) / len(rewards))
        if iteration == ITERATIONS - 1:
            break
        if not data:
            continue
        fwd_bwd = training_client.forward_backward(data, loss_fn)
        optim = training_client.optim_step(types.AdamParams(learning_rate=LEARNING_RATE))
        output = fwd_bwd.result()
        optim.result()
        assert len(output.loss_fn_outputs) == len(data)
        if iteration == 0:
            # On-policy, before any update: the trainer's log-prob of each sampled token is the
            # sampler's (f32 weights on both sides), so the importance ratio starts at 1.
            trainer = [logprobs[-1] for logprobs in output_logprobs(output)]
            gaps = [abs(t - s) for t, (_, s) in zip(trainer, sampled)]
            assert max(gaps) < 1e-2, f"trainer vs sampler log-probs of the sampled tokens differ by up to {max(gaps):.4f}"
        sampler = ready(training_client.save_weights_and_get_sampling_client())
    with capsys.disabled():
        print(f"\n{loss_fn}: mean reward per iteration {' -> '.join(f'{r:.2f}' for r in curve)}")
    assert curve[-1] >= curve[0] + 0.15 and sum(curve[-2:]) / 2 >= curve[0] + 0.2, (
        f"{loss_fn}: the mean reward did not rise: {curve}"
    )


CLIP = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}


def _expected_loss(loss_fn: str, logprobs: list[float], old: list[float], advantages: list[float]) -> float:
    total = 0.0
    for lp, q, a in zip(logprobs, old, advantages):
        ratio = math.exp(lp - q)
        clipped = min(max(ratio, CLIP["clip_low_threshold"]), CLIP["clip_high_threshold"])
        if loss_fn == "importance_sampling":
            total -= ratio * a
        elif loss_fn == "ppo":
            total -= min(ratio * a, clipped * a)
        else:  # cispo
            total -= clipped * lp * a
    return total


@pytest.mark.time_limit(90)
def test_rl_losses_follow_their_definitions(tinker_clients: TinkerClients) -> None:
    service_client = tinker_clients.service_client()
    training_client = ready(service_client.create_lora_training_client(base_model=BASE, rank=8, seed=0))
    prompt, sampled = PROMPTS[1], [22, 40, 18, 30, 26]
    current = trainer_logprobs(training_client, [*prompt, *sampled])[-len(sampled):]
    # Ratios e, 1/e, e, 1/e and ~1: inside and outside the clip range, with both signs of advantage.
    shifts = [-1.0, 1.0, -1.0, 1.0, -0.05]
    advantages = [1.0, 1.0, -1.0, -1.0, 0.5]
    old = [lp + d for lp, d in zip(current, shifts)]
    datum = rl_datum(prompt, sampled, old, advantages)
    seen = {}
    for loss_fn in ("importance_sampling", "ppo", "cispo"):
        config = None if loss_fn == "importance_sampling" else CLIP
        output = training_client.forward([datum], loss_fn, config).result()
        logprobs = output_logprobs(output)[0][-len(sampled):]
        assert max(abs(a - b) for a, b in zip(logprobs, current)) < 1e-4, (logprobs, current)
        expected = _expected_loss(loss_fn, logprobs, old, advantages)
        seen[loss_fn] = output.metrics["loss:sum"]
        assert math.isclose(seen[loss_fn], expected, rel_tol=1e-3, abs_tol=1e-4), (loss_fn, seen[loss_fn], expected)
    assert len({round(v, 4) for v in seen.values()}) == 3, seen

    # PPO with every token clipped (r = e > 1.2 with A > 0, r = 1/e < 0.8 with A < 0) has no gradient:
    # a step leaves the model as it was.
    clipped = rl_datum(prompt, sampled[:2], [current[0] - 1.0, current[1] + 1.0], [1.0, -1.0])
    training_client.forward_backward([clipped], "ppo", CLIP).result()
    training_client.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    after = trainer_logprobs(training_client, [*prompt, *sampled])[-len(sampled):]
    assert max(abs(a - b) for a, b in zip(after, current)) < 1e-5, (after, current)
    # The same batch with importance_sampling does move it.
    training_client.forward_backward([clipped], "importance_sampling").result()
    training_client.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    moved = trainer_logprobs(training_client, [*prompt, *sampled])[-len(sampled):]
    assert max(abs(a - b) for a, b in zip(moved, current)) > 1e-3, (moved, current)
