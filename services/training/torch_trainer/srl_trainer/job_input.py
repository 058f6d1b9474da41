"""A job's input as the trainer uses it: the spec, the rows as numpy arrays, the input adapters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import proto
from .errors import InputError

_pb, _ = proto.load()
# The contract's AdapterRole values (input adapters are kept by role).
ROLE_PREVIOUS: int = _pb.ADAPTER_ROLE_PREVIOUS
ROLE_REFERENCE: int = _pb.ADAPTER_ROLE_REFERENCE
ROLE_OUTPUT: int = _pb.ADAPTER_ROLE_OUTPUT
ROLE_INITIAL: int = _pb.ADAPTER_ROLE_INITIAL


@dataclass
class Row:
    tokens: np.ndarray  # int64 [L]
    # Position t (0..L-2) is scored when token t+1 is trained.
    scored: np.ndarray  # bool [L-1]
    sampler_logprobs: np.ndarray | None  # float32 [L], NaN where absent
    advantage: float
    weight: float

    @property
    def scored_count(self) -> int:
        return int(self.scored.sum())

    def sampler_at_scored(self) -> np.ndarray:
        """The sampler's log-prob of each scored position's target (NaN where absent)."""
        where = np.flatnonzero(self.scored)
        if self.sampler_logprobs is None:
            return np.full(len(where), np.nan, dtype=np.float32)
        return self.sampler_logprobs[where + 1]


@dataclass
class AdapterInput:
    format: str
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class JobInput:
    spec: Any  # trainer_pb2.JobSpec
    rows: list[Row] = field(default_factory=list)
    adapters: dict[int, AdapterInput] = field(default_factory=dict)  # by AdapterRole value


def row_from_message(message: Any, index: int) -> Row:
    """The row's shape is checked here; its token ids against the vocabulary once the model is loaded."""
    tokens = np.asarray(message.tokens, dtype=np.int64)
    n = len(tokens)
    if n == 0:
        raise InputError(f"row {index} has no tokens")
    trained = np.asarray(message.trained, dtype=bool)
    if len(trained) != n:
        raise InputError(f"row {index}: {len(trained)} trained flags for {n} tokens")
    sampler = None
    if len(message.sampler_logprobs):
        sampler = np.asarray(message.sampler_logprobs, dtype=np.float32)
        if len(sampler) != n:
            raise InputError(f"row {index}: {len(sampler)} sampler log-probs for {n} tokens")
    return Row(tokens=tokens, scored=trained[1:], sampler_logprobs=sampler, advantage=float(message.advantage), weight=float(message.weight))
