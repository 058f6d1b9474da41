"""Micro-batches without padding: the rows of a micro-batch laid end to end as one sequence, their
positions restarting per row and their bounds as cumulative lengths (`cu_seq_lens`), which the
packed attention (attention.py) reads to keep each row attending only to itself. No attention
mask is built and no token is padding: a micro-batch costs what its rows cost. The positions whose
next token is scored are gathered, so the vocabulary projection runs only there."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Pack:
    rows: list[int]
    input_ids: torch.Tensor  # [1, N]
    position_ids: torch.Tensor  # [1, N]
    cu_seq_lens: torch.Tensor  # [len(rows) + 1] int32: row k is input_ids[0, cu[k]:cu[k + 1]]
    max_length: int  # the longest row
    positions: torch.Tensor  # [n] indexes into the N packed positions, scored ones
    targets: torch.Tensor  # [n] the scored tokens
    row_of: torch.Tensor  # [n] index into `rows`
    # For each row of `rows`: its scored positions as indexes into the row (t scores token t + 1).
    row_positions: list[np.ndarray]
    num_tokens: int

    def attention_kwargs(self) -> dict[str, object]:
        """The decoder's keyword arguments that carry the row bounds to the attention (the names
        transformers passes through to an attention function: its FlashAttentionKwargs)."""
        return {"cu_seq_lens_q": self.cu_seq_lens, "cu_seq_lens_k": self.cu_seq_lens, "max_length_q": self.max_length, "max_length_k": self.max_length}


def plan_packs(lengths: dict[int, int], budget: int) -> list[list[int]]:
    """Micro-batches (lists of rows) of at most `budget` tokens; a row longer than the budget gets a
    micro-batch of its own. Rows go longest first, so rows of one length sit side by side (the
    attention computes a run of equal rows as one batch)."""
    order = sorted(lengths, key=lambda r: (-lengths[r], r))
    batches: list[list[int]] = []
    used = 0
    for r in order:
        if batches and used + lengths[r] <= budget:
            batches[-1].append(r)
            used += lengths[r]
        else:
            batches.append([r])
            used = lengths[r]
    return batches


def build_pack(members: list[int], tokens: dict[int, np.ndarray], scored: dict[int, np.ndarray], device: torch.device, targets: dict[int, np.ndarray] | None = None) -> Pack:
    """`scored[r]` is a bool array over row r's positions 0..len-2 (position t predicts token t+1).
    With `targets` (AdapterCommand datums), position t predicts `targets[r][t]` instead and
    `scored[r]` covers every position 0..len-1."""
    lengths = [len(tokens[r]) for r in members]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    positions, wanted, row_of, row_positions = [], [], [], []
    for k, r in enumerate(members):
        t = tokens[r]
        n = len(t)
        where = np.flatnonzero(scored[r][: n if targets is not None else max(n - 1, 0)])
        row_positions.append(where)
        positions.append(offsets[k] + where)
        wanted.append(targets[r][where] if targets is not None else t[where + 1])
        row_of.append(np.full(len(where), k))
    as_long = lambda parts: torch.from_numpy(np.concatenate(parts).astype(np.int64)).to(device)  # noqa: E731
    return Pack(
        rows=list(members),
        input_ids=as_long([tokens[r] for r in members])[None],
        position_ids=torch.from_numpy(np.concatenate([np.arange(n) for n in lengths]).astype(np.int64)).to(device)[None],
        cu_seq_lens=torch.from_numpy(offsets.astype(np.int32)).to(device),
        max_length=max(lengths),
        positions=as_long(positions),
        targets=as_long(wanted),
        row_of=as_long(row_of),
        row_positions=row_positions,
        num_tokens=int(offsets[-1]),
    )
