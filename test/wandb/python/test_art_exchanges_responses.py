"""ART 0.5.23's captured trajectories on the Responses API, unmodified: rollouts call
`client.responses.create` inside `art.trajectory(...)`, ART records each request and response as
the trajectory's `exchanges.responses`, and `backend.train` trains on them, the exact token ids and
log-probabilities taken from the responses' `token_generations`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import ArtTools, WandbEnv, art_version

pytestmark = pytest.mark.skipif(art_version() < (0, 5, 23), reason="ART < 0.5.23 does not capture /responses")


async def captured_groups(model: Any, prompts: list[str]) -> list[Any]:
    """One group per prompt, two captured rollouts each, rewarded 0 and 1."""
    import art

    client = model.openai_client()

    async def rollout(prompt: str, reward: float) -> None:
        await client.responses.create(
            model=model.get_inference_name(),
            instructions="Answer briefly.",
            input=prompt,
            max_output_tokens=8,
            temperature=1.0,
            include=["message.output_text.logprobs"],
        )
        art.current_trajectory(require=True).reward = reward

    return [
        await art.trajectory_group([art.trajectory(rollout(prompt, float(i))) for i in range(2)])
        for prompt in prompts
    ]


async def train_on_responses(tools: ArtTools) -> None:
    backend = tools.backend()
    try:
        model = await tools.register(backend, "tiny-chat", "xch-resp")
        groups = await captured_groups(model, ["Count to three.", "Name a colour."])
        for group in groups:
            for trajectory in group.trajectories:
                captured = trajectory.exchanges.responses
                assert len(captured) == 1, trajectory.exchanges
                assert not trajectory.messages_and_choices
                extra = captured[0].response.model_extra or {}
                assert len(extra["token_generations"]) == 1, extra
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
def test_rl_on_captured_responses(art_tools: ArtTools, wandb_env: WandbEnv) -> None:
    asyncio.run(train_on_responses(art_tools))
