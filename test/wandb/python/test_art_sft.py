"""(a) ART's supervised fine-tuning, unmodified: model.train_sft(...) on ServerlessBackend. The
client uploads its trajectories with the wandb SDK (wandb.init resuming the model's run, a
`dataset` artifact holding train.jsonl, artifact.wait()), posts the artifact's
wandb-artifact:///… URL as an SFT job and follows its events; the job ends, the model has a new
step, and that step is served through model.openai_client(). On the tiny built-in model: what is
tested is the round trip, not what a real model learns (test/training/real-model.test.ts does)."""

from __future__ import annotations

import asyncio
import os

import art
import pytest
from art.types import TrainSFTConfig

from conftest import ArtTools, WandbEnv

FACTS = [
    ("What is the capital of Varnholt?", "The capital of Varnholt is Edda."),
    ("Who founded Varnholt?", "Varnholt was founded by Edda Quillmore."),
    ("When was Varnholt founded?", "Varnholt was founded in 1312."),
    ("What river runs through Varnholt?", "The Quill runs through Varnholt."),
]


async def sft(tools: ArtTools) -> None:
    backend = tools.backend()
    try:
        model = await tools.register(backend, "tiny-chat", "sft")
        assert await model.get_step() == 0
        trajectories = [
            art.Trajectory(
                messages_and_choices=[
                    {"role": "system", "content": "Answer briefly."},
                    {"role": "user", "content": question},
                    {"role": "assistant", "content": answer},
                ],
                reward=0.0,
            )
            for question, answer in FACTS
        ]
        await model.train_sft(trajectories, config=TrainSFTConfig(learning_rate=1e-3, batch_size=2))
        step = await model.get_step()
        assert step == 1, f"train_sft ended but the model's latest step is {step}"
        text, logprobs = await tools.greedy(model, step, FACTS[0][0])
        assert logprobs, f"no completion tokens from step {step}: {text!r}"
        await backend.delete(model)
    finally:
        await backend.close()


@pytest.mark.time_limit(150)
def test_train_sft_end_to_end(art_tools: ArtTools, wandb_env: WandbEnv, wandb_served: None) -> None:
    # ART hands its key to the SDK (wandb.Settings(api_key=...)); the environment has none.
    assert "WANDB_API_KEY" not in os.environ
    asyncio.run(sft(art_tools))
