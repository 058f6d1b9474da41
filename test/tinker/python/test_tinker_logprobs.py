"""The sampler's log-probs are the trainer's: SamplingClient.compute_logprobs (prompt log-probs)
and a sample's own log-probs against TrainingClient.forward(..., "cross_entropy") on the same
tokens, for the base weights and for trained LoRA weights served by save_weights_and_get_sampling_client.

tiny-chat has f32 weights, so the engine and the trainer agree closely; SmolLM2 is Q4_1: the trainer
dequantizes it and the engine quantizes activations for its Q4 matmuls (README: a mean |diff| of
about 0.08 over the base, 0.11 after training), so its bound is looser. Each run prints what it
measured."""

from __future__ import annotations

import pytest
from tinker import types

from conftest import TinkerClients
from tinker_steps import FACT_ANSWER, FACT_PROMPT, SMOLLM2_TOKENS, ready, sft_datum, sft_step, trainer_logprobs

# base model -> (tokens scored, bound on the mean |diff|, bound on the max |diff|, LoRA options)
CASES = {
    "tiny-chat": ([*FACT_PROMPT, *FACT_ANSWER, 20, 21, 22], 2e-3, 1e-2, {}),
    # SmolLM2's GGUF ties the unembedding to the token embedding: the service refuses to train
    # lm_head there (the SDK's default train_unembed=True), so this run leaves it out. The max is
    # the Q4 error at the worst of 18 tokens and depends on where training went: two trainers
    # whose gradients agree to f32 rounding (the vocabulary projection's gradient taken after or
    # before the matmul) trained adapters with a max of 0.36 and 0.62 (means 0.071 and 0.083):
    # Adam's first steps move each weight by about the learning rate whatever its gradient's size,
    # so near-zero gradients that differ in rounding move weights apart. The trainer's own
    # agreement with the engine is bounded tightly on tiny-chat (f32) above.
    "smollm2": (SMOLLM2_TOKENS, 0.15, 1.0, {"train_unembed": False}),
}


def _gaps(served: list[float], trainer: list[float]) -> tuple[float, float]:
    assert len(served) == len(trainer), (len(served), len(trainer))
    diffs = [abs(a - b) for a, b in zip(served, trainer)]
    return sum(diffs) / len(diffs), max(diffs)


@pytest.mark.time_limit(240)
@pytest.mark.parametrize("base", list(CASES))
def test_sampler_logprobs_match_the_trainer(
    tinker_clients: TinkerClients, base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens, mean_bound, max_bound, lora = CASES[base]
    service_client = tinker_clients.service_client()
    training_client = ready(service_client.create_lora_training_client(base_model=base, rank=8, seed=0, **lora))
    report: list[str] = []

    def compare(sampler: object, label: str) -> None:
        # Prompt log-probs: None for the first token, then one per token.
        prompt_logprobs = sampler.compute_logprobs(types.ModelInput.from_ints(tokens)).result()  # type: ignore[attr-defined]
        assert len(prompt_logprobs) == len(tokens), (len(prompt_logprobs), len(tokens))
        assert prompt_logprobs[0] is None, prompt_logprobs[:3]
        served = [float(x) for x in prompt_logprobs[1:]]
        trainer = trainer_logprobs(training_client, tokens)
        mean_gap, max_gap = _gaps(served, trainer)
        report.append(f"{label} prompt: mean |diff| {mean_gap:.5f}, max {max_gap:.5f} over {len(served)} tokens")
        assert mean_gap < mean_bound and max_gap < max_bound, report[-1]

        # A sample's own log-probs, scored again by the trainer on prompt + sample.
        prompt = tokens[:4]
        sequence = sampler.sample(  # type: ignore[attr-defined]
            types.ModelInput.from_ints(prompt),
            num_samples=1,
            sampling_params=types.SamplingParams(max_tokens=8, temperature=1.0, seed=7),
        ).result().sequences[0]
        sampled = list(sequence.tokens)
        assert sampled and sequence.logprobs is not None and len(sequence.logprobs) == len(sampled), sequence
        trainer = trainer_logprobs(training_client, [*prompt, *sampled])[-len(sampled):]
        mean_gap, max_gap = _gaps([float(x) for x in sequence.logprobs], trainer)
        report.append(f"{label} sample: mean |diff| {mean_gap:.5f}, max {max_gap:.5f} over {len(sampled)} tokens")
        assert mean_gap < mean_bound and max_gap < max_bound, report[-1]

    try:
        # A fresh LoRA adapter (B = 0) is the base model.
        compare(ready(service_client.create_sampling_client(base_model=base)), f"{base} base")
        # Trained weights: a few steps that move the model, served as sampler weights.
        data = [sft_datum(tokens[:4], tokens[4:8])]
        for _ in range(3):
            sft_step(training_client, data, lr=5e-3)
        sampler = ready(training_client.save_weights_and_get_sampling_client())
        moved = sampler.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
        compare(sampler, f"{base} trained")
        base_logprobs = ready(service_client.create_sampling_client(base_model=base)).compute_logprobs(
            types.ModelInput.from_ints(tokens)
        ).result()
        assert max(abs(a - b) for a, b in zip(moved[1:], base_logprobs[1:])) > 0.05, "training did not move the served log-probs"
    finally:
        with capsys.disabled():  # the measured gaps, in the run's output
            print("\n" + "\n".join(report))
