"""Attention over packed rows (packing.py): each row of a one-sequence micro-batch attends causally
to itself only, with no [N x N] mask ever built.

Registered with transformers as the attention implementation "srl_packed". transformers then
builds no mask at all (an implementation outside its mask registry gets none) and passes the
decoder's keyword arguments through, so the row bounds arrive as `cu_seq_lens_q`/`max_length_q`.
On CUDA in bf16/f16 the rows go to torch's variable-length FlashAttention (cuDNN or Flash, one
kernel for the whole pack); elsewhere (CPU, f32, attention logit soft-capping) each run of equal
rows is one scaled_dot_product_attention call with `is_causal`, which on the CPU is torch's flash
kernel. Sliding windows (Gemma, Mistral) are honoured on both paths."""

from __future__ import annotations

import inspect
import logging
from typing import Any

import torch
import torch.nn.functional as F
from transformers import AttentionInterface

NAME = "srl_packed"
log = logging.getLogger(__name__)
_varlen_failed: set[str] = set()


def use_packed_attention(model: torch.nn.Module) -> None:
    """Make every attention layer of the model (and of any sub-config) the packed one."""
    config = getattr(model, "config", None)
    if config is not None and getattr(config, "_attn_implementation", None) != NAME:
        model.set_attn_implementation(NAME)  # type: ignore[operator]


def packed_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    sliding_window: int | None = None,
    softcap: float | None = None,
    cu_seq_lens_q: torch.Tensor | None = None,
    max_length_q: int | None = None,
    **_: Any,
) -> tuple[torch.Tensor, None]:
    """query [B, Hq, S, D], key/value [B, Hkv, S, D] -> ([B, S, Hq, D], None). Without row bounds
    (a plain call of the model), each of the B sequences is one row. `dropout` is not applied: the
    trainer keeps the model in eval mode, where transformers passes 0."""
    if attention_mask is not None:
        raise ValueError("packed attention takes row bounds (cu_seq_lens_q), not a mask")
    batch, heads, length, dim = query.shape
    if cu_seq_lens_q is None:
        cu_seq_lens_q = torch.arange(0, (batch + 1) * length, length, dtype=torch.int32, device=query.device)
        max_length_q = length
    flat = lambda t: t.transpose(1, 2).reshape(batch * length, t.shape[1], dim)  # noqa: E731  [N, H, D]
    q, k, v = flat(query), flat(key), flat(value)
    scale = scaling if scaling is not None else dim**-0.5
    out = None
    if _varlen_applies(q, softcap):
        out = _varlen(q, k, v, cu_seq_lens_q, int(max_length_q or length), scale, sliding_window)
    if out is None:
        out = _by_rows(q, k, v, cu_seq_lens_q, scale, sliding_window, softcap)
    return out.reshape(batch, length, heads, dim), None


def _varlen_applies(q: torch.Tensor, softcap: float | None) -> bool:
    return q.device.type == "cuda" and q.dtype in (torch.bfloat16, torch.float16) and not softcap and str(q.device) not in _varlen_failed


def _varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, max_length: int, scale: float, sliding_window: int | None) -> torch.Tensor | None:
    from torch.nn.attention.varlen import varlen_attn

    # Its keywords changed between releases: torch 2.11 has `is_causal` and takes no window, scale
    # or `enable_gqa`; later ones take `window_size`, `scale` and `enable_gqa` instead.
    accepted = _keywords(varlen_attn)
    options: dict[str, Any] = {}
    if "window_size" in accepted:
        options["window_size"] = (sliding_window - 1 if sliding_window else -1, 0)  # (left, right): causal, W keys
    elif sliding_window or "is_causal" not in accepted:
        return None
    else:
        options["is_causal"] = True
    if "scale" in accepted:
        options["scale"] = scale
    elif abs(scale - q.shape[-1] ** -0.5) > 1e-9 * scale:
        return None
    if q.shape[1] != k.shape[1]:
        if "enable_gqa" in accepted:
            options["enable_gqa"] = True
        else:  # each key/value head shared by its group of query heads, spelled out
            groups = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    try:
        return varlen_attn(q, k, v, cu, cu, max_length, max_length, **options)
    except (RuntimeError, NotImplementedError, ValueError, TypeError) as error:
        # A head size, GPU or torch release the kernels do not take: the per-row path computes the same.
        _varlen_failed.add(str(q.device))
        log.warning("variable-length attention unavailable on %s (%s); attention runs per row", q.device, error)
        return None


def _keywords(function: Any) -> frozenset[str]:
    return frozenset(inspect.signature(function).parameters)


def _by_rows(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, scale: float, sliding_window: int | None, softcap: float | None) -> torch.Tensor:
    """Each run of consecutive rows of one length as one [rows, H, L, D] attention call."""
    bounds = cu.tolist()
    parts: list[torch.Tensor] = []
    start = 0
    while start < len(bounds) - 1:
        length = bounds[start + 1] - bounds[start]
        end = start + 1
        while end < len(bounds) - 1 and bounds[end + 1] - bounds[end] == length:
            end += 1
        lo, hi, rows = bounds[start], bounds[end], end - start
        shaped = lambda t: t[lo:hi].reshape(rows, length, t.shape[1], t.shape[2]).transpose(1, 2)  # noqa: E731
        out = _attend(shaped(q), shaped(k), shaped(v), scale, sliding_window, softcap)
        parts.append(out.transpose(1, 2).reshape(hi - lo, q.shape[1], q.shape[2]))
        start = end
    return torch.cat(parts) if len(parts) > 1 else parts[0]


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, sliding_window: int | None, softcap: float | None) -> torch.Tensor:
    """Causal attention of [B, Hq, L, D] rows, GQA by head groups."""
    length = q.shape[2]
    window = sliding_window is not None and sliding_window < length
    if not softcap and not window:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=q.shape[1] != k.shape[1])
    i = torch.arange(length, device=q.device)
    allowed = i[:, None] >= i[None, :]
    if window:
        allowed &= i[:, None] - i[None, :] < sliding_window  # type: ignore[operator]
    if not softcap:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=scale, enable_gqa=q.shape[1] != k.shape[1])
    # Gemma 2's attention logit soft-capping: no fused kernel takes it, so the scores are explicit.
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = torch.matmul(q, k.transpose(2, 3)) * scale
    scores = torch.tanh(scores / softcap) * softcap
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return torch.matmul(weights, v)


AttentionInterface.register(NAME, packed_attention)
