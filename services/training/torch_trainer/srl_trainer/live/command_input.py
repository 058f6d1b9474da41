"""An AdapterCommand's input stream: one `command`, `file` chunks (LOAD_STATE's state), `datums`
batches (FORWARD*), `end`, in that order, each part's shape checked as it arrives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from .. import proto
from ..errors import CancelledError, InputError
from . import state

_pb, _ = proto.load()
KIND = _pb.AdapterCommandKind
ROLE_STATE: int = _pb.ADAPTER_ROLE_STATE
FORWARD_KINDS = (KIND.Value("ADAPTER_COMMAND_KIND_FORWARD"), KIND.Value("ADAPTER_COMMAND_KIND_FORWARD_BACKWARD"))


@dataclass
class Datum:
    tokens: np.ndarray  # int64 [n]
    targets: np.ndarray  # int64 [n]: position t predicts targets[t]
    inputs: dict[str, np.ndarray]  # float32 [n] each, by Tinker's names


@dataclass
class CommandInput:
    command: Any  # trainer_pb2.AdapterCommand
    files: dict[str, bytes] = field(default_factory=dict)
    datums: list[Datum] = field(default_factory=list)

    @property
    def kind_name(self) -> str:
        return KIND.Name(self.command.kind).removeprefix("ADAPTER_COMMAND_KIND_")


def read_command(requests: Iterator[Any]) -> CommandInput:
    got: CommandInput | None = None
    ended = False
    parts: dict[str, list[bytes]] = {}  # a file's chunks, joined once at the end (linear in its size)
    for request in requests:
        part = request.WhichOneof("message")
        if ended:
            raise InputError("messages after `end`")
        if part == "command":
            if got is not None:
                raise InputError("a second `command`")
            got = CommandInput(command=request.command)
            _check_command(got)
            continue
        if got is None:
            raise InputError("the first message must be `command`")
        if part == "file":
            _check_file(got, request.file)
            parts.setdefault(request.file.filename, []).append(request.file.data)
        elif part == "datums":
            if got.command.kind not in FORWARD_KINDS:
                raise InputError(f"{got.kind_name} reads no datums")
            for message in request.datums.datums:
                got.datums.append(datum_from_message(message, len(got.datums)))
        elif part == "end":
            ended = True
        else:
            raise InputError(f"unexpected message {part!r}")
    if got is None or not ended:
        raise CancelledError("the input stream ended before `end`")
    got.files = {name: b"".join(pieces) for name, pieces in parts.items()}
    if got.command.kind in FORWARD_KINDS and len(got.datums) != got.command.num_datums:
        raise InputError(f"the command announced {got.command.num_datums} datums, {len(got.datums)} arrived")
    return got


def _check_command(got: CommandInput) -> None:
    command = got.command
    if command.kind not in KIND.values() or command.kind == 0:
        raise InputError(f"command.kind {command.kind} is not a command")
    if not command.adapter_id:
        raise InputError("command.adapter_id is empty")
    if len(command.adapter_id) > 512:
        raise InputError("command.adapter_id is longer than 512 characters")


def _check_file(got: CommandInput, chunk: Any) -> None:
    if got.command.kind != KIND.Value("ADAPTER_COMMAND_KIND_LOAD_STATE"):
        raise InputError(f"{got.kind_name} reads no files")
    if chunk.role != ROLE_STATE or chunk.format != state.FORMAT:
        raise InputError(f"LOAD_STATE's files are role STATE, format {state.FORMAT!r}")
    if chunk.filename not in state.FILENAMES:
        raise InputError(f"a state's files are {', '.join(state.FILENAMES)}; got {chunk.filename[:80]!r}")


def datum_from_message(message: Any, index: int) -> Datum:
    """The datum's shape and values (token ids against the vocabulary once the model is loaded)."""
    tokens = np.asarray(message.tokens, dtype=np.int64)
    n = len(tokens)
    if n == 0:
        raise InputError(f"datum {index} has no tokens")
    targets = np.asarray(message.target_tokens, dtype=np.int64)
    if len(targets) != n:
        raise InputError(f"datum {index}: target_tokens has {len(targets)} values for {n} tokens")
    inputs = {name: np.asarray(values.values, dtype=np.float32) for name, values in message.inputs.items()}
    for name, values in inputs.items():
        if len(values) != n:
            raise InputError(f"datum {index}: inputs[{name!r}] has {len(values)} values for {n} tokens")
    return Datum(tokens=tokens, targets=targets, inputs=inputs)


def check_vocabulary(datums: list[Datum], vocab: int) -> None:
    for i, datum in enumerate(datums):
        for name, ids in (("tokens", datum.tokens), ("target_tokens", datum.targets)):
            if ids.min() < 0 or ids.max() >= vocab:
                raise InputError(f"datum {i}: {name} holds ids outside the base model's vocabulary (0..{vocab - 1})")
