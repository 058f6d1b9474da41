"""(f) ART 0.5.20+'s captured trajectories, unmodified: rollouts run inside `art.trajectory(...)`,
which records each OpenAI request and response the rollout makes as the trajectory's `exchanges`
(no messages_and_choices), grouped by `art.trajectory_group`; `backend.train` sends them and the
service trains on them, token ids and log-probs taken from the captured responses. Captured on
`/v1/chat/completions` and on `/v1/completions`. ART 0.5.18 has no capture: skipped there."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import pytest

from conftest import ArtTools, WandbEnv, art_version
from exchange_training import train_on_captured

pytestmark = pytest.mark.skipif(art_version() < (0, 5, 20), reason="ART < 0.5.20 has no exchange capture")


async def openai_call(kind: str, model: Any, prompt: str) -> object:
    """One rollout's request on chat completions or legacy completions, with the model's OpenAI client."""
    client = model.openai_client()
    if kind == "chat_completions":
        return await client.chat.completions.create(
            model=model.get_inference_name(),
            messages=[{"role": "user", "content": prompt}],
            max_tokens=8,
            temperature=1.0,
            logprobs=True,
        )
    return await client.completions.create(
        model=model.get_inference_name(), prompt=prompt, max_tokens=8, temperature=1.0, logprobs=1
    )


@pytest.mark.time_limit(180)
@pytest.mark.parametrize("kind", ["chat_completions", "completions"])
def test_rl_on_captured_exchanges(art_tools: ArtTools, wandb_env: WandbEnv, kind: str) -> None:
    asyncio.run(train_on_captured(art_tools, f"xch-{kind[:4]}", kind, partial(openai_call, kind)))
