"""ART 0.5.23's captured trajectories on the Responses API, unmodified: rollouts call
`client.responses.create` inside `art.trajectory(...)`, ART records each request and response as
the trajectory's `exchanges.responses`, and `backend.train` trains on them, the exact token ids and
log-probabilities taken from the responses' `token_generations`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import ArtTools, WandbEnv, art_version
from exchange_training import train_on_captured

pytestmark = pytest.mark.skipif(art_version() < (0, 5, 23), reason="ART < 0.5.23 does not capture /responses")


async def responses_call(model: Any, prompt: str) -> object:
    """One rollout's request on the Responses API, with the model's OpenAI client."""
    return await model.openai_client().responses.create(
        model=model.get_inference_name(),
        instructions="Answer briefly.",
        input=prompt,
        max_output_tokens=8,
        temperature=1.0,
        include=["message.output_text.logprobs"],
    )


def has_token_generations(exchange: Any) -> None:
    extra = exchange.response.model_extra or {}
    assert len(extra["token_generations"]) == 1, extra


@pytest.mark.time_limit(180)
def test_rl_on_captured_responses(art_tools: ArtTools, wandb_env: WandbEnv) -> None:
    asyncio.run(train_on_captured(art_tools, "xch-resp", "responses", responses_call, has_token_generations))
