"""Packed attention (attention.py) and the frozen-head log-probs (forward.py) against transformers'
own eager attention and plain autograd: the same values and gradients, row by row, with grouped
query heads, sliding windows and Gemma 2's soft-capping."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import Gemma2Config, Gemma2ForCausalLM, LlamaConfig, LlamaForCausalLM, PreTrainedModel, Qwen2Config, Qwen2ForCausalLM

from srl_trainer import forward
from srl_trainer.forward import scored_logprobs
from srl_trainer.packing import build_pack, plan_packs

SMALL = dict(vocab_size=61, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)


def llama() -> PreTrainedModel:
    return LlamaForCausalLM(LlamaConfig(**SMALL))


def qwen2_sliding() -> PreTrainedModel:
    return Qwen2ForCausalLM(Qwen2Config(**SMALL, use_sliding_window=True, sliding_window=4, max_window_layers=0))


def gemma2() -> PreTrainedModel:
    return Gemma2ForCausalLM(Gemma2Config(**SMALL, head_dim=8, sliding_window=4, attn_logit_softcapping=5.0, final_logit_softcapping=3.0))


def rows_alone(model: PreTrainedModel, tokens: dict[int, np.ndarray], scored: dict[int, np.ndarray]) -> dict[int, torch.Tensor]:
    """Each row's scored log-probs from transformers' eager attention, one row per call."""
    model.set_attn_implementation("eager")
    out = {}
    for r, t in tokens.items():
        logits = model(torch.tensor(t)[None]).logits[0].float()
        where = np.flatnonzero(scored[r])
        out[r] = torch.log_softmax(logits, -1)[where, torch.tensor(t[where + 1])]
    return out


@pytest.mark.parametrize("make", [llama, qwen2_sliding, gemma2], ids=["llama-gqa", "qwen2-sliding", "gemma2-softcap"])
def test_packed_rows_compute_what_each_row_computes_alone(make: type) -> None:
    torch.manual_seed(0)
    model = make().eval()
    rng = np.random.default_rng(2)
    # Rows of equal length side by side (one batched call) and rows of their own lengths.
    tokens = {i: rng.integers(0, 61, n) for i, n in enumerate([11, 11, 11, 7, 3, 9, 2])}
    scored = {r: rng.random(len(t) - 1) > 0.2 for r, t in tokens.items()}
    for p in model.parameters():
        p.requires_grad_(True)
    alone = rows_alone(model, tokens, scored)
    sum(v.sum() for v in alone.values()).backward()
    expected_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()

    total = torch.zeros(())
    for members in plan_packs({r: len(t) for r, t in tokens.items()}, 40):
        pack = build_pack(members, tokens, scored, torch.device("cpu"))
        lp, entropy = scored_logprobs(model, pack, chunk_tokens=5)
        start = 0
        for r, where in zip(pack.rows, pack.row_positions):
            np.testing.assert_allclose(lp[start : start + len(where)].detach().numpy(), alone[r].detach().numpy(), atol=3e-5)
            start += len(where)
        assert torch.all(entropy >= -1e-6)
        total = total + lp.sum()
    total.backward()
    for name, grad in expected_grads.items():
        got = dict(model.named_parameters())[name].grad
        assert got is not None, name
        torch.testing.assert_close(got, grad, atol=2e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("softcap", [None, 2.5])
def test_frozen_head_gradient_is_plain_autograds(softcap: float | None) -> None:
    torch.manual_seed(1)
    hidden = torch.randn(13, 16, dtype=torch.float64, requires_grad=True)
    head = torch.nn.Linear(16, 40, bias=False).double().requires_grad_(False)
    targets = torch.randint(0, 40, (13,))
    upstream = torch.randn(13, dtype=torch.float64)

    lp, entropy = forward._chunked(hidden, head, None, targets, softcap, chunk_tokens=4)
    (lp * upstream).sum().backward()
    fused = hidden.grad.clone()
    hidden.grad = None
    logits = head(hidden)
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    reference = torch.log_softmax(logits, -1).gather(1, targets[:, None]).squeeze(1)
    (reference * upstream).sum().backward()
    torch.testing.assert_close(lp.detach().double(), reference.detach(), atol=1e-5, rtol=0)
    torch.testing.assert_close(fused, hidden.grad, atol=1e-6, rtol=1e-6)
    probs = torch.softmax(logits, -1)
    torch.testing.assert_close(entropy.double(), -(probs * probs.log()).sum(-1).detach(), atol=1e-5, rtol=0)
    assert not entropy.requires_grad


@pytest.mark.skipif(not torch.cuda.is_available(), reason="variable-length FlashAttention runs on CUDA only (a GPU machine's check)")
@pytest.mark.parametrize("window", [None, 5], ids=["causal", "sliding-5"])
@pytest.mark.parametrize("heads", [(8, 2), (4, 4)], ids=["gqa", "mha"])
def test_varlen_kernel_computes_what_rows_compute(window: int | None, heads: tuple[int, int]) -> None:
    """On this GPU and torch release the varlen kernel runs (no fallback) and equals the per-row
    path, values and gradients, within bf16 rounding; a window it cannot take falls back."""
    from srl_trainer import attention

    torch.manual_seed(0)
    lengths = [37, 37, 5, 64, 1, 20]
    cu = torch.tensor(np.cumsum([0, *lengths]), dtype=torch.int32, device="cuda")
    q, k, v = (torch.randn(sum(lengths), h, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for h in (heads[0], heads[1], heads[1]))
    attention._varlen_failed.clear()
    out = attention._varlen(q, k, v, cu, max(lengths), 0.125, window)
    if out is None:
        assert window is not None and not attention._varlen_failed, "the varlen kernel refused a plain causal call"
        pytest.skip("this torch release's varlen_attn takes no sliding window: the per-row path serves it")
    assert not attention._varlen_failed
    grad = torch.randn_like(out)
    got = [out.float(), *torch.autograd.grad(out, (q, k, v), grad)]
    leaves = [t.detach().float().requires_grad_(True) for t in (q, k, v)]
    reference = attention._by_rows(*leaves, cu, 0.125, window, None)
    expected = [reference, *torch.autograd.grad(reference, leaves, grad.float())]
    for name, a, b in zip(["out", "dq", "dk", "dv"], got, expected):
        assert (a.float() - b).abs().max().item() < 0.05 * b.abs().max().item() + 1e-2, name
