"""The files of an adapter the trainer sends back (Train's and ConvertAdapter's OUTPUT, and
AdapterCommand's EXPORT alike): llama.cpp's GGUF and PEFT's two files, cut into 1 MiB chunks."""

from __future__ import annotations

from typing import Any, Iterator

from . import gguf_files, peft_files
from .adapter import Adapter

CHUNK_BYTES = 1 << 20
FORMATS = ("gguf", "peft")


def output_files(adapter: Adapter, base: gguf_files.GgufBase, base_model: Any, formats: list[str]) -> Iterator[tuple[str, dict[str, bytes]]]:
    """(format, files) in `formats` (empty: both). `base_model` is the contract's BaseModel or its
    ModelRef: its name (the GGUF's general.name) and its train_weights or name (PEFT's
    base_model_name_or_path)."""
    wanted = formats or list(FORMATS)
    if "gguf" in wanted:
        yield "gguf", {gguf_files.FILENAME: gguf_files.write(adapter, base, name=f"{base_model.name}-lora")}
    if "peft" in wanted:
        yield "peft", peft_files.write(adapter, base_model.train_weights.removeprefix("hf:") or base_model.name)


def chunks(files: dict[str, bytes]) -> Iterator[tuple[str, bytes]]:
    """(filename, piece) in order, at least one piece per file (an empty file is one empty piece)."""
    for name, data in files.items():
        for start in range(0, max(len(data), 1), CHUNK_BYTES):
            yield name, data[start : start + CHUNK_BYTES]
