"""(e) ART's RL loop through ServerlessBackend, unmodified: register, rollouts through
model.openai_client(), backend.train, the step advances and is served, model.log(metrics=...);
once without WANDB_API_KEY (nothing goes to the wandb SDK but its import) and once with it set,
as ART's docs tell users to (then backend.train and model.log call wandb.init, log the metrics
and record provenance on the latest `lora` artifact, all against this service)."""

from __future__ import annotations

import asyncio
import os

import pytest

from conftest import ArtTools, WandbEnv


async def rl_loop(tools: ArtTools, env: WandbEnv) -> None:
    backend = tools.backend()
    try:
        model = await tools.register(backend, "tiny-chat", "rl")
        assert await model.get_step() == 0
        groups = await tools.rollouts(model, ["Count to three.", "Name a colour."])
        await model.log(groups, split="train")
        result = await backend.train(model, groups, learning_rate=1e-3)
        assert result.step == 1, result
        assert await model.get_step() == 1
        assert "loss/train" in result.metrics, result.metrics
        await model.log(metrics=result.metrics, step=result.step, split="train")
        # The new step is served (and is the model's latest, not the base model).
        _, logprobs = await tools.greedy(model, 1, "Say something.")
        assert logprobs, "no log-probabilities for the new step's completion"
        step_one = await tools.fingerprint(model, 1)
        assert await tools.fingerprint(model, None) == step_one
        assert await tools.fingerprint(model, 0) != step_one
        if env.api_key_in_env:
            run = model._wandb_run
            assert run is not None, "with WANDB_API_KEY set, model.log(metrics=) starts a wandb run"
            run.finish()
            # backend.train recorded its provenance on the step's `lora` artifact (the checkpoint).
            import wandb

            latest = wandb.Api().artifact(f"{model.entity}/{model.project}/{model.name}:latest", type="lora")
            assert "step1" in latest.aliases, latest.aliases
            assert latest.metadata.get("wandb.provenance") == ["serverless-rl"], latest.metadata
        else:
            assert model._wandb_run is None
        # With WANDB_API_KEY, ART also logs its rows (training_step, loss/train, ...) through
        # wandb.init + run.log, into the run whose id is the model's name: the model's run here.
        status, body = tools.service.get(f"/v1/preview/runs/{model.run_id}/metrics?limit=1000")
        assert status == 200, body
        names = {(p["name"], p["value"]) for p in body["data"]}
        from_wandb = {name for name, value in names if name in ("training_step", "loss/train")}
        if env.api_key_in_env:
            assert ("training_step", 1) in names and "loss/train" in from_wandb, sorted(names)
        else:
            assert not from_wandb, sorted(names)
        await backend.delete(model)
    finally:
        await backend.close()


@pytest.mark.time_limit(180)
def test_rl_loop_without_wandb_key(art_tools: ArtTools, wandb_env: WandbEnv) -> None:
    assert "WANDB_API_KEY" not in os.environ
    asyncio.run(rl_loop(art_tools, wandb_env))


@pytest.mark.time_limit(180)
def test_rl_loop_with_wandb_api_key(art_tools: ArtTools, wandb_env_with_key: WandbEnv, wandb_served: None) -> None:
    assert os.environ["WANDB_API_KEY"] == wandb_env_with_key.service.key
    asyncio.run(rl_loop(art_tools, wandb_env_with_key))
