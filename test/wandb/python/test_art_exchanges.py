"""(f) ART 0.5.20+'s captured trajectories, unmodified: rollouts run inside `art.trajectory(...)`,
which records each OpenAI request and response the rollout makes as the trajectory's `exchanges`
(no messages_and_choices), grouped by `art.trajectory_group`; `backend.train` sends them and the
service trains on them, token ids and log-probs taken from the captured responses. Captured on
`/v1/chat/completions` and on `/v1/completions`. ART 0.5.18 has no capture: skipped there."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import ArtTools, WandbEnv, art_version

pytestmark = pytest.mark.skipif(art_version() < (0, 5, 20), reason="ART < 0.5.20 has no exchange capture")


async def captured_groups(model: Any, prompts: list[str], kind: str) -> list[Any]:
    """One group per prompt, two captured rollouts each, rewarded 0 and 1."""
    import art

    client = model.openai_client()

    async def rollout(prompt: str, reward: float) -> None:
        if kind == "chat_completions":
            await client.chat.completions.create(
                model=model.get_inference_name(),
                messages=[{"role": "user", "content": prompt}],
                max_tokens=8,
                temperature=1.0,
                logprobs=True,
            )
        else:
            await client.completions.create(
                model=model.get_inference_name(), prompt=prompt, max_tokens=8, temperature=1.0, logprobs=1
            )
        art.current_trajectory(require=True).reward = reward

    return [
        await art.trajectory_group([art.trajectory(rollout(prompt, float(i))) for i in range(2)])
        for prompt in prompts
    ]


async def train_on_exchanges(tools: ArtTools, kind: str) -> None:
    backend = tools.backend()
    try:
        model = await tools.register(backend, "tiny-chat", f"xch-{kind[:4]}")
        groups = await captured_groups(model, ["Count to three.", "Name a colour."], kind)
        for group in groups:
            for trajectory in group.trajectories:
                captured = getattr(trajectory.exchanges, kind)
                assert len(captured) == 1, trajectory.exchanges
                assert not trajectory.messages_and_choices
        _, before = await tools.greedy(model, 0, "Say something.")
        result = await backend.train(model, groups, learning_rate=1e-2)
        assert result.step == 1 and await model.get_step() == 1, result
        assert "loss/train" in result.metrics, result.metrics
        # Every captured exchange became a trained sequence.
        trained = {k: v for k, v in result.metrics.items() if k.endswith("num_trajectories")}
        assert trained and all(v == 4 for v in trained.values()), result.metrics
        _, after = await tools.greedy(model, 1, "Say something.")
        assert after != before, "the trained step serves the same log-probs as the base model"
        await backend.delete(model)
    finally:
        await backend.close()


@pytest.mark.time_limit(180)
@pytest.mark.parametrize("kind", ["chat_completions", "completions"])
def test_rl_on_captured_exchanges(art_tools: ArtTools, wandb_env: WandbEnv, kind: str) -> None:
    asyncio.run(train_on_exchanges(art_tools, kind))
