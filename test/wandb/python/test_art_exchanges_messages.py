"""ART 0.5.23's captured trajectories on Anthropic's Messages API: rollouts call `/v1/messages`
with the `anthropic` SDK (`AsyncAnthropic`) inside `art.trajectory(...)`; ART's httpx capture records
each exchange as the trajectory's `exchanges.messages`, and `backend.train`
trains on them, token ids and log-probs taken from the responses' vLLM-style extensions
(`return_token_ids`, `logprobs`). ART before 0.5.23 does not capture Messages: skipped there.
The client uses the SDK's aiohttp transport: see train_on_messages."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import ArtTools, WandbEnv, art_version

pytestmark = pytest.mark.skipif(art_version() < (0, 5, 23), reason="ART < 0.5.23 has no Messages capture")

# The token extensions ART reads from a Messages response (art/trajectories/_tokenize.py _messages_tokens).
EXTENSIONS = {"return_token_ids": True, "logprobs": True}


async def captured_groups(model: Any, client: Any, prompts: list[str]) -> list[Any]:
    """One group per prompt, two captured rollouts each, rewarded 0 and 1."""
    import art

    async def rollout(prompt: str, reward: float) -> None:
        request = dict(
            model=model.get_inference_name(),
            max_tokens=8,
            messages=[{"role": "user", "content": prompt}],
            # The SDK no longer lists `temperature`; the API (and this service) still take it.
            extra_body={**EXTENSIONS, "temperature": 1.0},
        )
        # Unary: ART 0.5.23 rebuilds a streamed Messages exchange with anthropic's
        # `accumulate_event`, whose signature anthropic 2.x changed (it now needs `json_bufs`), so a
        # streamed exchange is dropped on the client with this SDK.
        await client.messages.create(**request)
        art.current_trajectory(require=True).reward = reward

    return [
        await art.trajectory_group([art.trajectory(rollout(prompt, float(i))) for i in range(2)])
        for prompt in prompts
    ]


async def train_on_messages(tools: ArtTools) -> None:
    from anthropic import AsyncAnthropic, DefaultAioHttpClient

    backend = tools.backend()
    # anthropic 2.x sends through `httpx2`, which ART 0.5.23's capture does not patch (it patches
    # httpx, aiohttp and requests): with the default client nothing is captured. The SDK's aiohttp
    # transport goes through aiohttp, which ART captures.
    client = AsyncAnthropic(base_url=tools.service.url, api_key=tools.service.key, max_retries=0, http_client=DefaultAioHttpClient())
    try:
        model = await tools.register(backend, "tiny-chat", "xch-msgs")
        groups = await captured_groups(model, client, ["Count to three.", "Name a colour."])
        for group in groups:
            for trajectory in group.trajectories:
                captured = trajectory.exchanges.messages
                assert len(captured) == 1, trajectory.exchanges
                assert not trajectory.messages_and_choices
                extra = captured[0].response.model_extra or {}
                # The server's own tokens travel with the exchange, one log-prob per sampled token.
                assert extra.get("prompt_token_ids"), extra
                assert len(extra["token_ids"]) == len(extra["logprobs"]) == captured[0].response.usage.output_tokens, extra
        _, before = await tools.greedy(model, 0, "Say something.")
        result = await backend.train(model, groups, learning_rate=1e-2)
        assert result.step == 1 and await model.get_step() == 1, result
        assert "loss/train" in result.metrics, result.metrics
        trained = {k: v for k, v in result.metrics.items() if k.endswith("num_trajectories")}
        assert trained and all(v == 4 for v in trained.values()), result.metrics
        _, after = await tools.greedy(model, 1, "Say something.")
        assert after != before, "the trained step serves the same log-probs as the base model"
        await backend.delete(model)
    finally:
        await client.close()
        await backend.close()


@pytest.mark.time_limit(180)
def test_rl_on_captured_messages(art_tools: ArtTools, wandb_env: WandbEnv) -> None:
    asyncio.run(train_on_messages(art_tools))
