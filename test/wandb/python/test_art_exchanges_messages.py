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
from exchange_training import train_on_captured

pytestmark = pytest.mark.skipif(art_version() < (0, 5, 23), reason="ART < 0.5.23 has no Messages capture")

# The token extensions ART reads from a Messages response (art/trajectories/_tokenize.py _messages_tokens).
EXTENSIONS = {"return_token_ids": True, "logprobs": True}


def messages_call(client: Any) -> Any:
    """One rollout's request on the Messages API, with `client` (an AsyncAnthropic)."""

    async def call(model: Any, prompt: str) -> object:
        # Unary: ART 0.5.23 rebuilds a streamed Messages exchange with anthropic's
        # `accumulate_event`, whose signature anthropic 2.x changed (it now needs `json_bufs`), so a
        # streamed exchange is dropped on the client with this SDK.
        return await client.messages.create(
            model=model.get_inference_name(),
            max_tokens=8,
            messages=[{"role": "user", "content": prompt}],
            # The SDK no longer lists `temperature`; the API (and this service) still take it.
            extra_body={**EXTENSIONS, "temperature": 1.0},
        )

    return call


def has_server_tokens(exchange: Any) -> None:
    # The server's own tokens travel with the exchange, one log-prob per sampled token.
    extra = exchange.response.model_extra or {}
    assert extra.get("prompt_token_ids"), extra
    assert len(extra["token_ids"]) == len(extra["logprobs"]) == exchange.response.usage.output_tokens, extra


async def train_on_messages(tools: ArtTools) -> None:
    from anthropic import AsyncAnthropic, DefaultAioHttpClient

    # anthropic 2.x sends through `httpx2`, which ART 0.5.23's capture does not patch (it patches
    # httpx, aiohttp and requests): with the default client nothing is captured. The SDK's aiohttp
    # transport goes through aiohttp, which ART captures.
    client = AsyncAnthropic(base_url=tools.service.url, api_key=tools.service.key, max_retries=0, http_client=DefaultAioHttpClient())
    try:
        await train_on_captured(tools, "xch-msgs", "messages", messages_call(client), has_server_tokens)
    finally:
        await client.close()


@pytest.mark.time_limit(180)
def test_rl_on_captured_messages(art_tools: ArtTools, wandb_env: WandbEnv) -> None:
    asyncio.run(train_on_messages(art_tools))
