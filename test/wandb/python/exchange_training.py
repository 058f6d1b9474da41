"""Shared by the captured-exchange tests (test_art_exchanges*.py): two-rollout groups captured
inside `art.trajectory(...)`, then `backend.train` on them and the checks that every captured
exchange trained and the new step serves other log-probs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from conftest import ArtTools

PROMPTS = ["Count to three.", "Name a colour."]

# One rollout's calls for a prompt, made with the registered model.
RolloutCall = Callable[[Any, str], Awaitable[object]]


async def captured_groups(model: Any, prompts: list[str], call: RolloutCall) -> list[Any]:
    """One group per prompt, two captured rollouts each, rewarded 0 and 1."""
    import art

    async def rollout(prompt: str, reward: float) -> None:
        await call(model, prompt)
        art.current_trajectory(require=True).reward = reward

    return [
        await art.trajectory_group([art.trajectory(rollout(prompt, float(i))) for i in range(2)])
        for prompt in prompts
    ]


async def train_on_captured(
    tools: ArtTools,
    name: str,
    kind: str,
    call: RolloutCall,
    check_exchange: Callable[[Any], None] = lambda exchange: None,
) -> None:
    """Captures groups with `call` on a new model `name`, checks each trajectory holds exactly one
    exchange of `kind` (and `check_exchange` of it), trains one step and checks it trained."""
    backend = tools.backend()
    try:
        model = await tools.register(backend, "tiny-chat", name)
        groups = await captured_groups(model, PROMPTS, call)
        for group in groups:
            for trajectory in group.trajectories:
                captured = getattr(trajectory.exchanges, kind)
                assert len(captured) == 1, trajectory.exchanges
                assert not trajectory.messages_and_choices
                check_exchange(captured[0])
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
