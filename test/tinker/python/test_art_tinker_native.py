"""ART 0.5.23's TinkerNativeBackend, unmodified, against the service's Tinker API: register a
TrainableModel on tiny-chat (ART makes the LoRA training client, saves `step_000000` sampler
weights and starts its own OpenAI-compatible server, which samples through the SDK's sample_async),
sample groups through model.openai_client(), score them with a verifiable reward, train one step
(ART's cispo: forward_backward + optim_step, then `step_000001` sampler weights) and sample the new
step. ART is configured as its docs say for a base model it does not know: the renderer by name
(`_internal_config={"tinker_native_args": {"renderer_name": ...}}`; tiny-chat's template is ChatML,
which `qwen3_instruct` renders token for token, see test_tinker_cookbook.py), TINKER_BASE_URL /
TINKER_API_KEY / HF_ENDPOINT in the environment (the `tinker_clients` fixture).

Only in the art-0.5.23-tinker environment (openpipe-art[tinker]==0.5.23 on Python 3.12: the SDK
0.34.0, tinker-cookbook 0.5.8, torch); skipped in the others:
    .cache/clients/art-0.5.23-tinker/bin/python -m pytest test/tinker/python/test_art_tinker_native.py -q
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import os
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if importlib.util.find_spec("art") is None or importlib.util.find_spec("tinker_cookbook") is None:
    pytest.skip(
        "ART's TinkerNativeBackend (openpipe-art[tinker]==0.5.23: Python 3.12, the SDK 0.34.0, "
        "tinker-cookbook 0.5.8, torch) is installed only in the art-0.5.23-tinker environment",
        allow_module_level=True,
    )

from conftest import TinkerClients  # noqa: E402

if TYPE_CHECKING:
    import art

BASE = "tiny-chat"
RENDERER = "qwen3_instruct"  # ChatML, as tiny-chat's chat template
PROMPTS = ["Say a word.", "Name a colour.", "Count to three.", "Pick a letter."]
GROUP = 8
MAX_TOKENS = 4
# ART's default is 1e-5, made for billion-parameter models; the tiny model's step must be visible.
LEARNING_RATE = 1e-2


def first_token(choice: Any) -> int:
    """The id of a choice's first sampled token (ART's server names tokens `token_id:N`)."""
    content = choice.logprobs.content
    assert content, choice
    assert content[0].token.startswith("token_id:"), content[0]
    return int(content[0].token.removeprefix("token_id:"))


def reward(choice: Any) -> float:
    """Verifiable and learnable in a step by a random-weight model: the first token's id is even
    (test_tinker_rl.py uses the same reward, measured to rise within one or two updates)."""
    return 1.0 if first_token(choice) % 2 == 0 else 0.0


async def rollouts(model: art.TrainableModel) -> list[art.TrajectoryGroup]:
    """One group per prompt: GROUP completions in one request (`n`) to ART's server for the
    model's latest step, each a Trajectory of the messages and its Choice, rewarded."""
    import art

    client = model.openai_client()
    groups = []
    for prompt in PROMPTS:
        messages = [{"role": "user", "content": prompt}]
        completion = await client.chat.completions.create(
            model=model.get_inference_name(),
            messages=messages,  # type: ignore[arg-type]
            max_tokens=MAX_TOKENS,
            temperature=1.0,
            n=GROUP,
            logprobs=True,
        )
        assert completion.model == model.get_inference_name(), completion.model
        assert len(completion.choices) == GROUP, completion
        groups.append(
            art.TrajectoryGroup(
                art.Trajectory(messages_and_choices=[*messages, choice], reward=reward(choice))
                for choice in completion.choices
            )
        )
    return groups


def mean_reward(groups: list[art.TrajectoryGroup]) -> float:
    rewards = [t.reward for g in groups for t in g.trajectories]
    return sum(rewards) / len(rewards)


def advantages(group: art.TrajectoryGroup) -> list[float]:
    """ART's (normalize_advantages=True): reward - the group's mean, over the group's std."""
    rewards = [t.reward for t in group.trajectories]
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / std if std > 1e-8 else 0.0 for r in rewards]


async def logprobs_of(sampler: Any, prompt: list[int], tokens: list[int]) -> list[float]:
    """The log-probs of `tokens` after `prompt` under a sampling client (SDK compute_logprobs)."""
    import tinker

    scored = await sampler.compute_logprobs_async(tinker.ModelInput.from_ints(prompt + tokens))
    return list(scored[len(prompt) :])


def training_run(tinker_clients: TinkerClients, run_id: str) -> dict[str, Any]:
    """The run as the service's GET /api/v1/training_runs lists it (as the SDK sends it)."""
    request = urllib.request.Request(
        tinker_clients.service.url + "/api/v1/training_runs?limit=1000",
        headers={"X-API-Key": tinker_clients.key()},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        runs = json.loads(response.read())["training_runs"]
    [run] = [r for r in runs if r["training_run_id"] == run_id]
    return run


async def register_sample_train_sample(tinker_clients: TinkerClients, art_path: Path) -> str:
    import art
    from art.tinker_native import TinkerNativeBackend

    backend = TinkerNativeBackend(path=str(art_path))  # the key from TINKER_API_KEY
    name = f"art-tinker-{uuid.uuid4().hex[:8]}"
    model = art.TrainableModel(
        name=name,
        run_name=name,
        project="art-tinker-native",
        base_model=BASE,
        _internal_config={"tinker_native_args": {"renderer_name": RENDERER, "training_client_args": {"rank": 8}}},
    )
    try:
        await model.register(backend)
        assert await model.get_step() == 0
        assert model.get_inference_name() == f"{name}@0"
        [run_id] = model.read_state()["tinker_run_ids"]
        run = training_run(tinker_clients, run_id)
        assert run["base_model"] == BASE and run["lora_rank"] == 8, run
        step0_path = run["last_sampler_checkpoint"]["tinker_path"]
        assert step0_path == f"tinker://{run_id}/sampler_weights/step_000000", run

        before = await rollouts(model)
        result = await backend.train(model, before, learning_rate=LEARNING_RATE)
        assert result.step == 1, result
        assert await model.get_step() == 1
        assert model.get_inference_name() == f"{name}@1"
        # forward_backward's metrics pass through under the service's names (`loss:sum`, as
        # Tinker's), optim_step's as ART maps them (grad_norm -> loss/grad_norm, ...).
        assert math.isfinite(result.metrics["loss:sum"]), result.metrics
        assert result.metrics["loss/learning_rate"] == LEARNING_RATE, result.metrics
        # A datum per sample of every group whose rewards differ (ART skips the others).
        trainable = [g for g in before if len({t.reward for t in g.trajectories}) > 1]
        assert result.metrics["data/step_num_datums"] == len(trainable) * GROUP, result.metrics
        run = training_run(tinker_clients, run_id)
        step1_path = run["last_sampler_checkpoint"]["tinker_path"]
        assert step1_path == f"tinker://{run_id}/sampler_weights/step_000001", run

        # The new step is served through ART's server (rollouts checks the response names it).
        after = await rollouts(model)

        # What the step trained on, scored by the service under step 0 and step 1: every sample's
        # tokens after its rendered prompt (what ART's server answered: the sampler's own tokens
        # and log-probs, the importance ratio cispo starts from) and its advantage.
        samples = [
            (
                list(choice.prompt_token_ids),
                list(choice.token_ids),
                [t.logprob for t in choice.logprobs.content],
                advantage,
            )
            for group in before
            for choice, advantage in zip(
                (t.messages_and_choices[-1] for t in group.trajectories), advantages(group), strict=True
            )
        ]
        service_client = tinker_clients.service_client()
        old, new = [
            await asyncio.gather(
                *(
                    logprobs_of(sampler, prompt, tokens)
                    for sampler in [await service_client.create_sampling_client_async(model_path=path)]
                    for prompt, tokens, _, _ in samples
                )
            )
            for path in (step0_path, step1_path)
        ]
        for (prompt, tokens, sampled, _), scored in zip(samples, old, strict=True):
            assert 0 < len(tokens) <= MAX_TOKENS, tokens
            assert len(sampled) == len(tokens) and all(lp <= 0 for lp in sampled), sampled
            assert max(abs(a - b) for a, b in zip(scored, sampled)) < 1e-2, (tokens, scored, sampled)
        # New weights: the same tokens score differently, and the step did what cispo asks of it
        # (at ratio 1, the gradient of sum(advantage * log-prob) over the sampled tokens): that sum
        # rose.
        changes = [abs(a - b) for o, n in zip(old, new) for a, b in zip(o, n)]
        assert max(changes) > 1e-3, changes
        objective = [sum(s[3] * sum(lps) for s, lps in zip(samples, scored)) for scored in (old, new)]
        assert objective[1] > objective[0], objective
        return (
            f"ART TinkerNativeBackend on {BASE}: mean reward {mean_reward(before):.2f} at step 0,"
            f" {mean_reward(after):.2f} at step 1; sum(advantage * log-prob) {objective[0]:.2f} -> {objective[1]:.2f}"
        )
    finally:
        await backend.close()


@pytest.mark.time_limit(120)
def test_tinker_native_backend_registers_samples_trains_and_serves_the_new_step(
    tinker_clients: TinkerClients, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ART is imported here, once the fixture has set HF_ENDPOINT and HF_HOME: huggingface_hub (which
    # importing ART imports) reads them once, at its import, as in a user's script started with them.
    if "huggingface_hub" in sys.modules:
        from huggingface_hub import constants

        assert constants.ENDPOINT == os.environ["HF_ENDPOINT"], (
            f"huggingface_hub was imported before HF_ENDPOINT was set (it uses {constants.ENDPOINT})"
        )
    summary = asyncio.run(register_sample_train_sample(tinker_clients, tmp_path / ".art"))
    with capsys.disabled():
        print(f"\n{summary}")
