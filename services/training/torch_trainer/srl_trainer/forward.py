"""The forward pass the losses need: log-probabilities (and entropies) of the scored tokens of a
pack, with the vocabulary projection computed only at those positions and in chunks, so a
[positions x vocabulary] logits tensor never exists whole (and under autograd neither kept nor
computed again: each chunk's gradient with respect to the hidden states is taken while its logits
exist)."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
from peft.tuners.tuners_utils import BaseTunerLayer
from transformers import PreTrainedModel

from .attention import use_packed_attention
from .job_input import Row
from .packing import Pack, build_pack, plan_packs


def causal_lm_of(model: torch.nn.Module) -> PreTrainedModel:
    """The transformers model under a PEFT wrapper (or the model itself)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model  # type: ignore[return-value]


@contextlib.contextmanager
def layer_checkpointing(model: torch.nn.Module, enabled: bool) -> Iterator[None]:
    """Recompute each decoder layer in the backward pass instead of keeping its activations.

    transformers only checkpoints layers in training mode; the model stays in eval mode (no
    dropout anywhere) and only the decoder layers' own flag is raised."""
    lm = causal_lm_of(model)
    if not enabled:
        yield
        return
    lm.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    layers = [m for m in lm.modules() if getattr(m, "gradient_checkpointing", False)]
    for layer in layers:
        layer.training = True
    try:
        yield
    finally:
        for layer in layers:
            layer.training = False
        lm.activation_checkpointing_disable()


def _scored_logprobs(hidden: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, targets: torch.Tensor, softcap: float | None, head: torch.nn.Module | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    # `head`: an output projection wrapped by PEFT (a live adapter's LoRA on lm_head), called as a
    # module so the active adapter's delta applies; else the plain weight.
    logits = (head(hidden) if head is not None else F.linear(hidden, weight, bias)).float()
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    lse = torch.logsumexp(logits, dim=-1)
    logprobs = logits.gather(1, targets[:, None]).squeeze(1) - lse
    with torch.no_grad():
        entropy = lse - (torch.softmax(logits, dim=-1) * logits).sum(-1)
    return logprobs, entropy


class _FrozenHeadLogprobs(torch.autograd.Function):
    """log p(target) and entropy through a frozen output projection, with d log p / d hidden
    computed in the forward pass while the chunk's logits exist: (onehot - softmax) W, kept as one
    hidden-sized vector per position. The backward pass then scales it by the incoming gradient,
    so the [positions x vocabulary] logits are neither kept nor computed again (checkpointing the
    chunk would recompute them: one vocabulary projection more per trained position)."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor, softcap: float | None) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        logits = F.linear(hidden, weight, bias).float()
        capped = torch.tanh(logits / softcap) * softcap if softcap else logits
        lse = torch.logsumexp(capped, dim=-1)
        logprobs = capped.gather(1, targets[:, None]).squeeze(1) - lse
        probs = torch.softmax(capped, dim=-1)
        entropy = lse - (probs * capped).sum(-1)
        if ctx.needs_input_grad[0]:
            # d log p / d capped = onehot - p, in place over the probabilities (no second V-wide tensor).
            d_logits = probs.neg_()
            d_logits.scatter_add_(1, targets[:, None], torch.ones_like(logprobs)[:, None])
            if softcap:
                d_logits.mul_(1 - (capped / softcap) ** 2)  # d tanh(x/c)c / dx
            ctx.save_for_backward(torch.matmul(d_logits.to(weight.dtype), weight).to(hidden.dtype))
        ctx.mark_non_differentiable(entropy)
        return logprobs, entropy

    @staticmethod
    def backward(ctx: Any, grad_logprobs: torch.Tensor, _grad_entropy: torch.Tensor) -> tuple[torch.Tensor | None, None, None, None, None]:  # type: ignore[override]
        if not ctx.needs_input_grad[0]:
            return None, None, None, None, None
        (d_hidden,) = ctx.saved_tensors
        return (grad_logprobs[:, None] * d_hidden).to(d_hidden.dtype), None, None, None, None


def scored_logprobs(model: torch.nn.Module, pack: Pack, chunk_tokens: int, autocast: bool = False, grad_positions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(log p(target), entropy) at each scored position of the pack, in float32.

    `grad_positions` (bool per scored position): under autograd only those enter the graph, the
    others are computed without it (their loss term has no gradient), which spares the backward
    pass of the vocabulary projection at, e.g., an RL datum's prompt positions."""
    lm = causal_lm_of(model)
    head = lm.get_output_embeddings()
    wrapped = _adapted_head(head)
    head = head.get_base_layer() if isinstance(head, BaseTunerLayer) and wrapped is None else head
    softcap = getattr(lm.config, "final_logit_softcapping", None)
    device_type = pack.input_ids.device.type
    with torch.autocast(device_type, dtype=torch.bfloat16, enabled=autocast):
        use_packed_attention(lm)
        out = lm.get_decoder()(input_ids=pack.input_ids, position_ids=pack.position_ids, use_cache=False, **pack.attention_kwargs())
        last = out.last_hidden_state
        hidden = last.reshape(-1, last.shape[-1]).index_select(0, pack.positions)
        if grad_positions is None or not torch.is_grad_enabled() or bool(grad_positions.all()):
            return _chunked(hidden, head, wrapped, pack.targets, softcap, chunk_tokens)
        # Two passes, the positions with a gradient and those without, put back in order.
        on = torch.nonzero(grad_positions).squeeze(1)
        off = torch.nonzero(~grad_positions).squeeze(1)
        lp_on, ent_on = _chunked(hidden.index_select(0, on), head, wrapped, pack.targets.index_select(0, on), softcap, chunk_tokens)
        with torch.no_grad():
            lp_off, ent_off = _chunked(hidden.detach().index_select(0, off), head, wrapped, pack.targets.index_select(0, off), softcap, chunk_tokens)
    n = hidden.shape[0]
    logprobs = hidden.new_zeros(n, dtype=torch.float32).index_copy(0, on, lp_on).index_copy(0, off, lp_off)
    entropies = hidden.new_zeros(n, dtype=torch.float32).index_copy(0, on, ent_on).index_copy(0, off, ent_off)
    return logprobs, entropies


def _adapted_head(head: torch.nn.Module) -> torch.nn.Module | None:
    """The output projection when a LoRA of it is active (it must then be called as a module);
    None when it computes its frozen base layer only (PEFT wraps it for another adapter)."""
    if not isinstance(head, BaseTunerLayer) or head.disable_adapters:
        return None
    lora = getattr(head, "lora_A", {})
    return head if any(name in lora for name in head.active_adapters) else None


def _chunked(hidden: torch.Tensor, head: torch.nn.Module, wrapped: torch.nn.Module | None, targets: torch.Tensor, softcap: float | None, chunk_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The vocabulary projection and log-softmax, `chunk_tokens` positions at a time."""
    weight = None if wrapped is not None else head.weight
    bias = None if wrapped is not None else head.bias
    # A trained projection (LoRA on lm_head) needs its own backward: the chunk is checkpointed.
    frozen = wrapped is None and weight is not None and not weight.requires_grad and (bias is None or not bias.requires_grad)
    logprobs, entropies = [], []
    for start in range(0, hidden.shape[0], chunk_tokens):
        h = hidden[start : start + chunk_tokens]
        t = targets[start : start + chunk_tokens]
        if not torch.is_grad_enabled():
            lp, ent = _scored_logprobs(h, weight, bias, t, softcap, wrapped)
        elif frozen:
            lp, ent = _FrozenHeadLogprobs.apply(h, weight, bias, t, softcap)
        else:
            lp, ent = checkpoint(_scored_logprobs, h, weight, bias, t, softcap, wrapped, use_reentrant=False)
        logprobs.append(lp)
        entropies.append(ent)
    if not logprobs:
        empty = hidden.new_zeros(0, dtype=torch.float32)
        return empty, empty
    return torch.cat(logprobs), torch.cat(entropies).detach()


def logprobs_by_row(model: torch.nn.Module, rows: list[Row], which: list[int], micro_batch_tokens: int, chunk_tokens: int, autocast: bool, check: Callable[[], None]) -> dict[int, np.ndarray]:
    """Without gradient: each row's log-probs at its scored positions, keyed by row index."""
    out: dict[int, np.ndarray] = {}
    with torch.no_grad():
        for members in plan_packs({r: len(rows[r].tokens) for r in which}, micro_batch_tokens):
            check()
            pack = pack_rows(members, rows, pack_device(model))
            lp = scored_logprobs(model, pack, chunk_tokens, autocast)[0].cpu().numpy()
            start = 0
            for r, where in zip(pack.rows, pack.row_positions):
                out[r] = lp[start : start + len(where)]
                start += len(where)
    return out


def pack_rows(members: list[int], rows: list[Row], device: torch.device) -> Pack:
    """A pack of the job's rows (row indexes, from plan_packs)."""
    return build_pack(members, {r: rows[r].tokens for r in members}, {r: rows[r].scored for r in members}, device)


def pack_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device
