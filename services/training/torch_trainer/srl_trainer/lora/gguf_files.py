"""An adapter as a llama.cpp LoRA GGUF (one file): `<tensor>.lora_a` (ggml dims [n_in, rank]) and
`.lora_b` ([rank, n_out]) under the base tensor's GGUF name, B's rows permuted for q/k of "llama"
GGUFs (architectures.py). Only the base model's GGUF metadata is needed (GgufBase)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol

import gguf
import numpy as np

from ..architectures import Architecture, gguf_tensor_namer, permute_rows, unpermute_rows
from ..base_models import GgufFacts
from ..errors import InputError
from .adapter import Adapter

FILENAME = "adapter.gguf"


class GgufBase(Protocol):
    """What a LoRA GGUF needs of its base model: a LoadedModel, or fit.BaseTensors (no weights)."""

    @property
    def facts(self) -> GgufFacts: ...

    @property
    def arch(self) -> Architecture: ...


def write(adapter: Adapter, base: GgufBase, name: str) -> bytes:
    facts = base.facts
    namer = gguf_tensor_namer(facts.architecture, facts.n_blocks)
    size = sum(a.nbytes + b.nbytes for a, b in adapter.pairs.values())
    with tempfile.TemporaryDirectory(dir=memory_backed_dir(size)) as tmp:
        path = os.path.join(tmp, FILENAME)
        writer = gguf.GGUFWriter(path, facts.architecture)
        writer.add_string("general.type", "adapter")
        writer.add_string("general.name", name)
        writer.add_string("adapter.type", "lora")
        writer.add_float32("adapter.lora.alpha", float(adapter.alpha))
        for module in sorted(adapter.pairs):
            a, b = adapter.pairs[module]
            heads = _qk_heads(base, module)
            if heads:
                b = permute_rows(b, *heads)
            tensor = namer(module)
            writer.add_tensor(f"{tensor}.weight.lora_a", np.ascontiguousarray(a, dtype=np.float32))
            writer.add_tensor(f"{tensor}.weight.lora_b", np.ascontiguousarray(b, dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return Path(path).read_bytes()


def memory_backed_dir(size: int) -> str | None:
    """Where gguf-py's file (it writes and reads paths only) passes through: /dev/shm, memory,
    when it has room for it twice over (a container's is often 64 MiB), else the temporary
    directory. A GPU host's temporary directory can be a slow disk: an 8B model's two 160 MiB
    adapter files took 18 s to return there (5.5 s without the GGUF)."""
    shm = "/dev/shm"
    try:
        stat = os.statvfs(shm)
    except OSError:
        return None
    return shm if os.access(shm, os.W_OK) and stat.f_bavail * stat.f_frsize > 2 * size + (16 << 20) else None


def read(data: bytes, base: GgufBase, modules: list[str]) -> Adapter:
    """Reads a llama.cpp LoRA GGUF for this base; `modules` are the HF names it may adapt."""
    facts = base.facts
    namer = gguf_tensor_namer(facts.architecture, facts.n_blocks)
    by_gguf = {f"{namer(m)}.weight": m for m in modules}
    with tempfile.NamedTemporaryFile(suffix=".gguf", dir=memory_backed_dir(len(data))) as tmp:
        tmp.write(data)
        tmp.flush()
        try:
            reader = gguf.GGUFReader(tmp.name)
        except Exception as error:
            raise InputError(f"unreadable LoRA GGUF: {error}") from error
        fields = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("tokenizer.")}
        if fields.get("adapter.type") != "lora":
            raise InputError("the GGUF is not a LoRA adapter (adapter.type is not lora)")
        if fields.get("general.architecture") != facts.architecture:
            raise InputError(f"the adapter is for {fields.get('general.architecture')}, the base model is {facts.architecture}")
        tensors = {t.name: np.array(t.data, dtype=np.float32) for t in reader.tensors}
    rank = 0
    adapter = Adapter(rank=0, alpha=0.0)
    for key, a in tensors.items():
        if not key.endswith(".lora_a"):
            continue
        tensor = key.removesuffix(".lora_a")
        module = by_gguf.get(tensor)
        b = tensors.get(f"{tensor}.lora_b")
        if module is None or b is None:
            raise InputError(f"the adapter's tensor {tensor} is not a projection the trainer adapts")
        rank = a.shape[0]
        heads = _qk_heads(base, module)
        adapter.pairs[module] = (a, unpermute_rows(b, *heads) if heads else b)
    if not adapter.pairs:
        raise InputError("the LoRA GGUF holds no tensors")
    alpha = float(fields.get("adapter.lora.alpha") or 0.0)
    adapter.rank = rank
    adapter.alpha = alpha if alpha > 0 else float(rank)  # llama.cpp reads alpha 0 as scale 1
    return adapter


def _qk_heads(base: GgufBase, module: str) -> tuple[int, int] | None:
    """(n_head, n_head_kv) for the permute of this module's rows, or None when not permuted."""
    if not base.arch.permuted_qk:
        return None
    if module.endswith(".q_proj"):
        return base.facts.n_head, base.facts.n_head
    if module.endswith(".k_proj"):
        return base.facts.n_head, base.facts.n_head_kv
    return None
