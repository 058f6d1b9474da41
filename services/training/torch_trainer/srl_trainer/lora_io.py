"""LoRA adapters on a loaded base model: attach (PEFT), read and write them as PEFT files and as
llama.cpp LoRA GGUFs.

Pairs are kept per Hugging Face module name ("model.layers.0.self_attn.q_proj") as PEFT holds
them: A [rank, n_in], B [n_out, rank], delta W = (alpha / rank) B A. A llama.cpp LoRA GGUF stores
the same arrays (`<tensor>.lora_a`: ggml dims [n_in, rank], `.lora_b`: [rank, n_out]), under the
base tensor's GGUF name, with B's rows permuted for q/k of "llama" GGUFs (architectures.py).
Writing one needs only the base model's GGUF metadata (GgufBase), so an adapter made elsewhere
is converted without loading any weights (read_base, check_fits).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import gguf
import numpy as np
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer
from safetensors.numpy import save as save_safetensors
from safetensors.torch import load as load_safetensors

from .architectures import SUPPORTED, Architecture, gguf_tensor_namer, permute_rows, unpermute_rows
from .base_models import GgufFacts, LoadedModel, gguf_facts
from .errors import InputError, UnsupportedModelError
from .gguf_meta import read_meta

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
    missing = [name for name in (PEFT_CONFIG, PEFT_WEIGHTS) if name not in files]
    if missing:
        raise InputError(f"a PEFT adapter needs {PEFT_CONFIG} and {PEFT_WEIGHTS}; missing {', '.join(missing)}")
    try:
        config = json.loads(files[PEFT_CONFIG])
        tensors = load_safetensors(files[PEFT_WEIGHTS])  # torch's loader: numpy has no bf16
    except Exception as error:
        raise InputError(f"unreadable PEFT adapter: {error}") from error
    rank, alpha = _peft_settings(config)
    adapter = Adapter(rank=rank, alpha=alpha)
    for module, (a, b) in _peft_pairs(tensors).items():
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != rank or b.shape[1] != rank:
            raise InputError(f"{module}: lora_A {tuple(a.shape)} and lora_B {tuple(b.shape)} are not a rank-{rank} LoRA pair (r in {PEFT_CONFIG})")
        adapter.pairs[module] = (a, b)
    if not adapter.pairs:
        raise InputError("the PEFT adapter holds no LoRA tensors")
    return adapter


# PEFT settings a llama.cpp LoRA (one alpha, delta W = alpha / rank * B A) cannot express.
_UNSUPPORTED_PEFT = {"use_dora": "DoRA", "use_rslora": "rsLoRA", "fan_in_fan_out": "fan_in_fan_out", "rank_pattern": "per-module ranks", "alpha_pattern": "per-module alphas"}


def _peft_settings(config: Any) -> tuple[int, float]:
    """(rank, alpha) of a plain LoRA's adapter_config.json."""
    if not isinstance(config, dict):
        raise InputError(f"{PEFT_CONFIG} is not a JSON object")
    if config.get("peft_type", "LORA") != "LORA":
        raise InputError(f"the adapter is {config.get('peft_type')!r}, not LORA")
    unsupported = [label for key, label in _UNSUPPORTED_PEFT.items() if config.get(key)]
    if unsupported:
        raise InputError(f"{', '.join(unsupported)} adapters are not supported (plain LoRA only)")
    try:
        rank, alpha = int(config["r"]), float(config["lora_alpha"])
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"{PEFT_CONFIG} needs numeric r and lora_alpha") from error
    if rank <= 0 or not np.isfinite(alpha):
        raise InputError(f"{PEFT_CONFIG}: r {rank} and lora_alpha {alpha} are not a LoRA's")
    return rank, alpha


def _peft_pairs(tensors: dict[str, torch.Tensor]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(A, B) per module as float32; any other tensor is refused rather than silently dropped."""
    halves: dict[str, dict[str, np.ndarray]] = {}
    others: list[str] = []
    for key, tensor in tensors.items():
        part = "A" if key.endswith(".lora_A.weight") else "B" if key.endswith(".lora_B.weight") else None
        if part is None or not tensor.is_floating_point():
            others.append(key)
            continue
        module = key.removesuffix(f".lora_{part}.weight").removeprefix(_PEFT_PREFIX)
        halves.setdefault(module, {})[part] = tensor.float().numpy()
    if others:
        raise InputError(f"the PEFT adapter holds tensors that are not LoRA A/B weights (e.g. {sorted(others)[:3]}): not supported")
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for module, half in halves.items():
        if "A" not in half or "B" not in half:
            raise InputError(f"{module} has lora_{next(iter(half))} but no lora_{'B' if 'A' in half else 'A'}")
        pairs[module] = (half["A"], half["B"])
    return pairs


# --- llama.cpp LoRA GGUF --------------------------------------------------------------------


class GgufBase(Protocol):
    """What a LoRA GGUF needs of its base model: a LoadedModel, or BaseTensors (no weights)."""

    @property
    def facts(self) -> GgufFacts: ...

    @property
    def arch(self) -> Architecture: ...


@dataclass(frozen=True)
class BaseTensors:
    """A base model as its GGUF's header describes it."""

    facts: GgufFacts
    arch: Architecture
    # GGUF tensor name -> ggml dims; a weight matrix is (n_in, n_out).
    shapes: dict[str, tuple[int, ...]]


def read_base(path: str) -> BaseTensors:
    try:
        meta = read_meta(path)
    except Exception as error:
        raise UnsupportedModelError(f"cannot read the base model's GGUF ({path}): {error}") from error
    facts = gguf_facts(path, meta)
    arch = SUPPORTED.get(facts.architecture)
    if arch is None:
        raise UnsupportedModelError(f"architecture {facts.architecture!r} is not one the trainer writes LoRA adapters for ({', '.join(sorted(SUPPORTED))})")
    if facts.n_blocks <= 0 or facts.n_head <= 0 or facts.n_head_kv <= 0:
        raise UnsupportedModelError(f"the base model's GGUF ({path}) lacks its block or head counts")
    return BaseTensors(facts, arch, {name: info.shape for name, info in meta.tensors.items()})


def check_fits(adapter: Adapter, base: BaseTensors) -> None:
    """Every pair adapts a projection the base model has, with its dimensions: a LoRA for another
    model would otherwise make a GGUF that llama.cpp refuses, or worse, serves."""
    facts = base.facts
    namer = gguf_tensor_namer(facts.architecture, facts.n_blocks)
    for module in sorted(adapter.pairs):
        a, b = adapter.pairs[module]
        if module.rsplit(".", 1)[-1] not in base.arch.default_targets:
            raise InputError(f"{module}: LoRA on it is not supported for {facts.architecture}; the projections are {', '.join(base.arch.default_targets)}")
        try:
            tensor = f"{namer(module)}.weight"
        except ValueError:
            raise InputError(f"{module}: the base model ({facts.architecture}, {facts.n_blocks} blocks) has no tensor for it") from None
        shape = base.shapes.get(tensor)
        if shape is None or len(shape) != 2:
            raise InputError(f"{module}: the base model has no weight matrix {tensor}")
        n_in, n_out = shape
        if a.shape[1] != n_in or b.shape[0] != n_out:
            raise InputError(f"{module}: the adapter maps {a.shape[1]} -> {b.shape[0]} features, the base model's {tensor} {n_in} -> {n_out}; is the adapter for another model?")


def _qk_heads(base: GgufBase, module: str) -> tuple[int, int] | None:
    """(n_head, n_head_kv) for the permute of this module's rows, or None when not permuted."""
    if not base.arch.permuted_qk:
        return None
    if module.endswith(".q_proj"):
        return base.facts.n_head, base.facts.n_head
    if module.endswith(".k_proj"):
        return base.facts.n_head, base.facts.n_head_kv
    return None


def to_gguf_file(adapter: Adapter, base: GgufBase, name: str) -> bytes:
    facts = base.facts
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


def from_gguf_file(data: bytes, base: GgufBase, modules: list[str]) -> Adapter:
    """Reads a llama.cpp LoRA GGUF for this base; `modules` are the HF names it may adapt."""
    facts = base.facts
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

