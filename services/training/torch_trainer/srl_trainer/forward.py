"""The forward pass the losses need: log-probabilities (and entropies) of the scored tokens of a
pack, with the vocabulary projection computed only at those positions and in chunks, so a
[positions x vocabulary] logits tensor never exists whole (and under autograd each chunk is
recomputed in the backward pass instead of kept)."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import numpy as np

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
from peft.tuners.tuners_utils import BaseTunerLayer
from transformers import PreTrainedModel

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
    # module so the active adapter's delta applies; else the plain weight (bit-for-bit as before).
    logits = (head(hidden) if head is not None else F.linear(hidden, weight, bias)).float()
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    lse = torch.logsumexp(logits, dim=-1)
    logprobs = logits.gather(1, targets[:, None]).squeeze(1) - lse
    with torch.no_grad():
        entropy = lse - (torch.softmax(logits, dim=-1) * logits).sum(-1)
    return logprobs, entropy


def scored_logprobs(model: torch.nn.Module, pack: Pack, chunk_tokens: int, autocast: bool = False, grad_positions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(log p(target), entropy) at each scored position of the pack, in float32.

    `grad_positions` (bool per scored position): under autograd only those enter the graph, the
    others are computed without it (their loss term has no gradient), which spares the backward
    pass of the vocabulary projection at, e.g., an RL datum's prompt positions."""
    lm = causal_lm_of(model)
    head = lm.get_output_embeddings()
    wrapped = head if isinstance(head, BaseTunerLayer) else None
    softcap = getattr(lm.config, "final_logit_softcapping", None)
    device_type = pack.input_ids.device.type
    with torch.autocast(device_type, dtype=torch.bfloat16, enabled=autocast):
        out = lm.get_decoder()(
            input_ids=pack.input_ids,
            position_ids=pack.position_ids,
            attention_mask=pack.attention_mask,
            use_cache=False,
        )
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


def _chunked(hidden: torch.Tensor, head: torch.nn.Module, wrapped: torch.nn.Module | None, targets: torch.Tensor, softcap: float | None, chunk_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The vocabulary projection and log-softmax, `chunk_tokens` positions at a time."""
    weight = None if wrapped is not None else head.weight
    bias = None if wrapped is not None else head.bias
    logprobs, entropies = [], []
    for start in range(0, hidden.shape[0], chunk_tokens):
        h = hidden[start : start + chunk_tokens]
        t = targets[start : start + chunk_tokens]
        if torch.is_grad_enabled():
            lp, ent = checkpoint(_scored_logprobs, h, weight, bias, t, softcap, wrapped, use_reentrant=False)
        else:
            lp, ent = _scored_logprobs(h, weight, bias, t, softcap, wrapped)
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
        for bins in plan_packs({r: len(rows[r].tokens) for r in which}, micro_batch_tokens):
            check()
            pack = pack_rows(bins, rows, pack_device(model))
            lp = scored_logprobs(model, pack, chunk_tokens, autocast)[0].cpu().numpy()
            start = 0
            for r, where in zip(pack.rows, pack.row_positions):
                out[r] = lp[start : start + len(where)]
                start += len(where)
    return out


def pack_rows(bins: list[list[int]], rows: list[Row], device: torch.device) -> Pack:
    """A pack of the job's rows (bins of row indexes, from plan_packs)."""
    members = [r for b in bins for r in b]
    return build_pack(bins, {r: rows[r].tokens for r in members}, {r: rows[r].scored for r in members}, device)


def pack_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device
