"""Packed micro-batches compute exactly what each row computes alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from srl_trainer.forward import scored_logprobs
from srl_trainer.packing import build_pack, plan_packs


@pytest.fixture(scope="module")
def model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    m = LlamaForCausalLM(LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2))
    return m.eval()


def test_plan_respects_the_budget_and_keeps_every_row() -> None:
    lengths = {0: 17, 1: 9, 2: 30, 3: 5, 4: 30, 5: 12, 6: 100}
    for budget in (20, 30, 64, 1000):
        plan = plan_packs(lengths, budget)
        rows = sorted(r for batch in plan for r in batch)
        assert rows == sorted(lengths)
        for batch in plan:
            assert len(batch) == 1 or sum(lengths[r] for r in batch) <= budget


@pytest.mark.parametrize("budget", [12, 40, 1000])
def test_packed_logprobs_equal_each_row_alone(model: LlamaForCausalLM, budget: int) -> None:
    rng = np.random.default_rng(1)
    tokens = {i: rng.integers(0, 50, n) for i, n in enumerate([17, 9, 30, 5, 12, 2])}
    scored = {r: rng.random(len(t) - 1) > 0.3 for r, t in tokens.items()}
    model.set_attn_implementation("sdpa")  # the reference: transformers' own attention, one row a call
    with torch.no_grad():
        alone = {}
        for r, t in tokens.items():
            logits = torch.log_softmax(model(torch.tensor(t)[None]).logits[0], -1)
            where = np.flatnonzero(scored[r])
            alone[r] = logits[where, torch.tensor(t[where + 1])].numpy()
        for batch in plan_packs({r: len(t) for r, t in tokens.items()}, budget):
            pack = build_pack(batch, tokens, scored, torch.device("cpu"))
            lp, entropy = scored_logprobs(model, pack, chunk_tokens=3)
            assert pack.num_tokens == sum(len(tokens[r]) for r in pack.rows)
            start = 0
            for r, where in zip(pack.rows, pack.row_positions):
                np.testing.assert_allclose(lp[start : start + len(where)].numpy(), alone[r], atol=2e-5)
                start += len(where)
            assert torch.all(entropy >= 0)


def test_logits_chunk_from_the_job_sets_how_many_positions_are_projected_at_once(model: LlamaForCausalLM, monkeypatch: pytest.MonkeyPatch) -> None:
    # ART's logprob_calculation_chunk_size reaches the trainer as ResourceHints.logits_chunk_tokens:
    # it changes how the log-softmax is computed (chunks of that many positions), not its values.
    from srl_trainer import forward, proto
    from srl_trainer.resources import hinted

    pb, _ = proto.load()
    assert hinted(pb.ResourceHints(logits_chunk_tokens=4))[1] == 4
    tokens = {0: np.arange(1, 12) % 50}
    scored = {0: np.ones(10, dtype=bool)}
    pack = build_pack([0], tokens, scored, torch.device("cpu"))
    calls: list[int] = []
    original = forward._scored_logprobs

    def counting(hidden: torch.Tensor, *args: object) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(hidden.shape[0])
        return original(hidden, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(forward, "_scored_logprobs", counting)
    with torch.no_grad():
        whole, _ = scored_logprobs(model, pack, 1024)
        chunked, _ = scored_logprobs(model, pack, hinted(pb.ResourceHints(logits_chunk_tokens=4))[1])
    assert calls == [10, 4, 4, 2]
    assert torch.allclose(whole, chunked, atol=1e-6)
