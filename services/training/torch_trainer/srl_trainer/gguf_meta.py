"""A GGUF's header without its arrays: the scalar metadata and the tensor infos.

gguf-py's GGUFReader builds an object per element of every array, the tokenizer's vocabulary
included: seconds for a 150k-token vocabulary. What the trainer asks of a GGUF before loading it
(architecture, heads, blocks, tensor types and shapes) is all scalars and tensor infos, so arrays
are skipped here (their strings by length alone) and the header reads in milliseconds.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import Any

import gguf

_MAGIC = b"GGUF"
# GGUFValueType -> struct code of the fixed-size scalars (8 string and 9 array are variable).
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class TensorInfo:
    # ggml's dims, innermost first: a weight matrix is (n_in, n_out).
    shape: tuple[int, ...]
    type_name: str


@dataclass(frozen=True)
class GgufMeta:
    fields: dict[str, Any]  # scalar metadata only; arrays are absent
    tensors: dict[str, TensorInfo]


class _Cursor:
    def __init__(self, data: mmap.mmap, order: str) -> None:
        self.data, self.order, self.offset = data, order, 0

    def scalar(self, code: str) -> Any:
        fmt = self.order + code
        (value,) = struct.unpack_from(fmt, self.data, self.offset)
        self.offset += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.scalar("Q")
        raw = self.data[self.offset : self.offset + n]
        self.offset += n
        return raw.decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            self.skip_array()
            return None
        raise ValueError(f"unknown GGUF value type {kind} at byte {self.offset}")

    def skip_array(self) -> None:
        kind, count = self.scalar("I"), self.scalar("Q")
        if kind in _SCALARS:
            self.offset += count * struct.calcsize(self.order + _SCALARS[kind])
            return
        for _ in range(count):
            if kind == _STRING:
                n = self.scalar("Q")
                self.offset += n  # skipped undecoded: the vocabulary is most of the header
            else:
                self.value(kind)


def read_meta(path: str) -> GgufMeta:
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != _MAGIC:
            raise ValueError("not a GGUF file (bad magic)")
        # A file written on a big-endian machine reads as a version with zero low bytes.
        order = ">" if struct.unpack_from("<I", data, 4)[0] & 0xFFFF == 0 else "<"
        cursor = _Cursor(data, order)
        cursor.offset = 4
        version = cursor.scalar("I")
        if version not in (2, 3):
            raise ValueError(f"GGUF version {version} is not supported")
        tensor_count, kv_count = cursor.scalar("Q"), cursor.scalar("Q")
        fields: dict[str, Any] = {}
        for _ in range(kv_count):
            key = cursor.string()
            value = cursor.value(cursor.scalar("I"))
            if value is not None:
                fields[key] = value
        tensors: dict[str, TensorInfo] = {}
        for _ in range(tensor_count):
            name = cursor.string()
            shape = tuple(cursor.scalar("Q") for _ in range(cursor.scalar("I")))
            tensors[name] = TensorInfo(shape=shape, type_name=_type_name(cursor.scalar("I")))
            cursor.scalar("Q")  # the data offset
        return GgufMeta(fields=fields, tensors=tensors)


def _type_name(raw: int) -> str:
    try:
        return gguf.GGMLQuantizationType(raw).name
    except ValueError:
        return f"TYPE_{raw}"  # newer than this gguf-py: reported, and refused as undequantizable
