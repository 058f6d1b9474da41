"""Micro-batches without padding waste: rows sorted by length go into bins as long as the longest
row of the micro-batch, several short rows sharing a bin (each attending only to itself, positions
restarting per row), and the bins stacked as a [bins, length] batch. Attention then costs what the
rows themselves cost (a single sequence of every row packed end to end would pay for attention
across the whole pack), and when every bin holds one full row no mask is needed at all, the
fastest path of PyTorch's attention. The positions whose next token is scored are gathered, so the
vocabulary projection runs only there."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Pack:
    rows: list[int]
    input_ids: torch.Tensor  # [B, C]
    position_ids: torch.Tensor  # [B, C]
    attention_mask: torch.Tensor | None  # [B, 1, C, C] bool; None: every bin is one full row (plain causal)
    positions: torch.Tensor  # [n] indexes into the flattened [B * C] positions, scored ones
    targets: torch.Tensor  # [n] the scored tokens
    row_of: torch.Tensor  # [n] index into `rows`
    # For each row of `rows`: its scored positions as indexes into the row (t scores token t + 1).
    row_positions: list[np.ndarray]
    num_tokens: int  # real (unpadded) tokens


def plan_packs(lengths: dict[int, int], budget: int) -> list[list[list[int]]]:
    """Micro-batches (lists of bins, each a list of rows) of at most `budget` bin tokens; a row
    longer than the budget gets a micro-batch of its own."""
    order = sorted(lengths, key=lambda r: (-lengths[r], r))
    batches: list[list[list[int]]] = []
    i = 0
    while i < len(order):
        capacity = lengths[order[i]]
        bins: list[list[int]] = []
        room: list[int] = []
        while i < len(order):
            n = lengths[order[i]]
            slot = next((k for k, free in enumerate(room) if free >= n), None)
            if slot is None:
                if bins and (len(bins) + 1) * capacity > budget:
                    break
                bins.append([])
                room.append(capacity)
                slot = len(bins) - 1
            bins[slot].append(order[i])
            room[slot] -= n
            i += 1
        batches.append(bins)
    return batches


def build_pack(bins: list[list[int]], tokens: dict[int, np.ndarray], scored: dict[int, np.ndarray], device: torch.device, targets: dict[int, np.ndarray] | None = None) -> Pack:
    """`scored[r]` is a bool array over row r's positions 0..len-2 (position t predicts token t+1).
    With `targets` (AdapterCommand datums), position t predicts `targets[r][t]` instead and
    `scored[r]` covers every position 0..len-1."""
    capacity = max(sum(len(tokens[r]) for r in b) for b in bins)
    B = len(bins)
    ids = np.zeros((B, capacity), dtype=np.int64)
    pos = np.zeros((B, capacity), dtype=np.int64)
    seg = np.full((B, capacity), -1, dtype=np.int64)  # -1: padding
    rows: list[int] = []
    positions, wanted, row_of, row_positions = [], [], [], []
    for b, members in enumerate(bins):
        offset = 0
        for r in members:
            t = tokens[r]
            n = len(t)
            ids[b, offset : offset + n] = t
            pos[b, offset : offset + n] = np.arange(n)
            seg[b, offset : offset + n] = len(rows)
            where = np.flatnonzero(scored[r][: n if targets is not None else max(n - 1, 0)])
            row_positions.append(where)
            positions.append(b * capacity + offset + where)
            wanted.append(targets[r][where] if targets is not None else t[where + 1])
            row_of.append(np.full(len(where), len(rows)))
            rows.append(r)
            offset += n
    mask = None
    if any(len(b) > 1 for b in bins) or (seg < 0).any():
        s = torch.from_numpy(seg)
        causal = torch.ones(capacity, capacity, dtype=torch.bool).tril_()
        mask = (s[:, :, None] == s[:, None, :]) & causal & (s[:, None, :] >= 0)
        # A padding position attends to itself only, so no attention row is empty (NaN).
        mask |= torch.eye(capacity, dtype=torch.bool) & (s[:, :, None] < 0)
        mask = mask[:, None].to(device)
    as_long = lambda parts: torch.from_numpy(np.concatenate(parts).astype(np.int64)).to(device)  # noqa: E731
    return Pack(
        rows=rows,
        input_ids=torch.from_numpy(ids).to(device),
        position_ids=torch.from_numpy(pos).to(device),
        attention_mask=mask,
        positions=as_long(positions),
        targets=as_long(wanted),
        row_of=as_long(row_of),
        row_positions=row_positions,
        num_tokens=int((seg >= 0).sum()),
    )
