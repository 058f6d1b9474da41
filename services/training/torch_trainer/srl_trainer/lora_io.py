"""LoRA adapters on a loaded base model: attach (PEFT), read and write them as PEFT files and as
llama.cpp LoRA GGUFs.

Pairs are kept per Hugging Face module name ("model.layers.0.self_attn.q_proj") as PEFT holds
them: A [rank, n_in], B [n_out, rank], delta W = (alpha / rank) B A. A llama.cpp LoRA GGUF stores
the same arrays (`<tensor>.lora_a`: ggml dims [n_in, rank], `.lora_b`: [rank, n_out]), under the
base tensor's GGUF name, with B's rows permuted for q/k of "llama" GGUFs (architectures.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import gguf
import numpy as np
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer
from safetensors.numpy import load as load_safetensors
from safetensors.numpy import save as save_safetensors

from .architectures import gguf_tensor_namer, permute_rows, unpermute_rows
from .base_models import LoadedModel
from .errors import InputError

PEFT_CONFIG = "adapter_config.json"
PEFT_WEIGHTS = "adapter_model.safetensors"
GGUF_FILE = "adapter.gguf"
_PEFT_PREFIX = "base_model.model."


@dataclass
class Adapter:
    rank: int
    alpha: float
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def targets(self) -> set[str]:
        return {name.rsplit(".", 1)[-1] for name in self.pairs}


def attach(loaded: LoadedModel, rank: int, alpha: float, targets: list[str], seed: int) -> PeftModel:
    """Wraps the base model with a fresh LoRA (PEFT's init: A kaiming-uniform, B zero), seeded."""
    unknown = [t for t in targets if t not in loaded.arch.default_targets]
    if unknown:
        raise InputError(f"LoRA target modules {unknown} do not exist in {loaded.facts.architecture}; choose from {list(loaded.arch.default_targets)}")
    torch.manual_seed(seed)
    config = LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(targets), lora_dropout=0.0, bias="none")
    return get_peft_model(loaded.model, config)


def detach(model: PeftModel) -> None:
    """Removes the LoRA layers, leaving the cached base model as it was loaded."""
    model.unload()


def lora_layers(model: PeftModel, adapter_name: str = "default") -> dict[str, LoraLayer]:
    out: dict[str, LoraLayer] = {}
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer) and adapter_name in module.lora_A:
            out[name.removeprefix(_PEFT_PREFIX)] = module
    return out


def read_adapter(model: PeftModel, adapter_name: str = "default") -> Adapter:
    layers = lora_layers(model, adapter_name)
    first = next(iter(layers.values()))
    config = model.peft_config[adapter_name]
    pairs = {
        name: (layer.lora_A[adapter_name].weight.detach().float().cpu().numpy(), layer.lora_B[adapter_name].weight.detach().float().cpu().numpy())
        for name, layer in layers.items()
    }
    return Adapter(rank=first.r[adapter_name], alpha=float(config.lora_alpha), pairs=pairs)


def load_into(model: PeftModel, adapter: Adapter, adapter_name: str = "default") -> None:
    """Copies an adapter's weights into the attached LoRA of the same shape and targets."""
    layers = lora_layers(model, adapter_name)
    missing = sorted(set(layers) - set(adapter.pairs))
    extra = sorted(set(adapter.pairs) - set(layers))
    if missing or extra:
        raise InputError(f"the adapter does not match the LoRA being trained (missing {missing[:3]}, unexpected {extra[:3]})")
    with torch.no_grad():
        for name, layer in layers.items():
            a, b = adapter.pairs[name]
            wa, wb = layer.lora_A[adapter_name].weight, layer.lora_B[adapter_name].weight
            if tuple(a.shape) != tuple(wa.shape) or tuple(b.shape) != tuple(wb.shape):
                raise InputError(f"{name}: adapter shapes {a.shape}/{b.shape} do not match {tuple(wa.shape)}/{tuple(wb.shape)}")
            wa.copy_(torch.from_numpy(np.ascontiguousarray(a)))
            wb.copy_(torch.from_numpy(np.ascontiguousarray(b)))


# --- PEFT files -----------------------------------------------------------------------------


def to_peft_files(adapter: Adapter, base_model_name: str) -> dict[str, bytes]:
    tensors: dict[str, np.ndarray] = {}
    for name, (a, b) in adapter.pairs.items():
        tensors[f"{_PEFT_PREFIX}{name}.lora_A.weight"] = np.ascontiguousarray(a, dtype=np.float32)
        tensors[f"{_PEFT_PREFIX}{name}.lora_B.weight"] = np.ascontiguousarray(b, dtype=np.float32)
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model_name,
        "r": adapter.rank,
        "lora_alpha": adapter.alpha,
        "lora_dropout": 0.0,
        "bias": "none",
        "target_modules": sorted(adapter.targets),
        "use_rslora": False,
        "use_dora": False,
        "fan_in_fan_out": False,
        "init_lora_weights": True,
        "inference_mode": True,
    }
    return {PEFT_CONFIG: json.dumps(config, indent=2).encode(), PEFT_WEIGHTS: save_safetensors(tensors, metadata={"format": "pt"})}


def from_peft_files(files: dict[str, bytes]) -> Adapter:
    if PEFT_CONFIG not in files or PEFT_WEIGHTS not in files:
        raise InputError(f"a PEFT adapter needs {PEFT_CONFIG} and {PEFT_WEIGHTS}")
    try:
        config = json.loads(files[PEFT_CONFIG])
        tensors = load_safetensors(files[PEFT_WEIGHTS])
    except Exception as error:
        raise InputError(f"unreadable PEFT adapter: {error}") from error
    if config.get("use_rslora") or config.get("use_dora"):
        raise InputError("rsLoRA and DoRA adapters are not supported")
    adapter = Adapter(rank=int(config["r"]), alpha=float(config["lora_alpha"]))
    for key, a in tensors.items():
        if not key.endswith(".lora_A.weight"):
            continue
        module = key.removesuffix(".lora_A.weight").removeprefix(_PEFT_PREFIX)
        b = tensors.get(key.replace(".lora_A.weight", ".lora_B.weight"))
        if b is None:
            raise InputError(f"{module} has lora_A but no lora_B")
        adapter.pairs[module] = (a.astype(np.float32), b.astype(np.float32))
    if not adapter.pairs:
        raise InputError("the PEFT adapter holds no LoRA tensors")
    return adapter


# --- llama.cpp LoRA GGUF --------------------------------------------------------------------


def _qk_heads(loaded: LoadedModel, module: str) -> tuple[int, int] | None:
    """(n_head, n_head_kv) for the permute of this module's rows, or None when not permuted."""
    if not loaded.arch.permuted_qk:
        return None
    if module.endswith(".q_proj"):
        return loaded.facts.n_head, loaded.facts.n_head
    if module.endswith(".k_proj"):
        return loaded.facts.n_head, loaded.facts.n_head_kv
    return None


def to_gguf_file(adapter: Adapter, loaded: LoadedModel, name: str) -> bytes:
    facts = loaded.facts
    namer = gguf_tensor_namer(facts.architecture, facts.n_blocks)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, GGUF_FILE)
        writer = gguf.GGUFWriter(path, facts.architecture)
        writer.add_string("general.type", "adapter")
        writer.add_string("general.name", name)
        writer.add_string("adapter.type", "lora")
        writer.add_float32("adapter.lora.alpha", float(adapter.alpha))
        for module in sorted(adapter.pairs):
            a, b = adapter.pairs[module]
            heads = _qk_heads(loaded, module)
            if heads:
                b = permute_rows(b, *heads)
            base = namer(module)
            writer.add_tensor(f"{base}.weight.lora_a", np.ascontiguousarray(a, dtype=np.float32))
            writer.add_tensor(f"{base}.weight.lora_b", np.ascontiguousarray(b, dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return Path(path).read_bytes()


def from_gguf_file(data: bytes, loaded: LoadedModel, modules: list[str]) -> Adapter:
    """Reads a llama.cpp LoRA GGUF for this base; `modules` are the HF names it may adapt."""
    facts = loaded.facts
    namer = gguf_tensor_namer(facts.architecture, facts.n_blocks)
    by_gguf = {f"{namer(m)}.weight": m for m in modules}
    with tempfile.NamedTemporaryFile(suffix=".gguf") as tmp:
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
        base = key.removesuffix(".lora_a")
        module = by_gguf.get(base)
        b = tensors.get(f"{base}.lora_b")
        if module is None or b is None:
            raise InputError(f"the adapter's tensor {base} is not a projection the trainer adapts")
        rank = a.shape[0]
        heads = _qk_heads(loaded, module)
        adapter.pairs[module] = (a, unpermute_rows(b, *heads) if heads else b)
    if not adapter.pairs:
        raise InputError("the LoRA GGUF holds no tensors")
    alpha = float(fields.get("adapter.lora.alpha") or 0.0)
    adapter.rank = rank
    adapter.alpha = alpha if alpha > 0 else float(rank)  # llama.cpp reads alpha 0 as scale 1
    return adapter


def read_files(files: dict[str, bytes], fmt: str, loaded: LoadedModel) -> Adapter:
    if fmt == "peft":
        return from_peft_files(files)
    if fmt == "gguf":
        data = files.get(GGUF_FILE) or next(iter(files.values()), None)
        if data is None:
            raise InputError("empty GGUF adapter")
        return from_gguf_file(data, loaded, _candidate_modules(loaded))
    raise InputError(f"unknown adapter format {fmt!r}")


def _candidate_modules(loaded: LoadedModel) -> list[str]:
    targets = set(loaded.arch.default_targets)
    return [name for name, _ in loaded.model.named_modules() if name.rsplit(".", 1)[-1] in targets]

