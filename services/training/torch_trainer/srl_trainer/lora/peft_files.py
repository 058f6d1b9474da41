"""An adapter as PEFT's files: adapter_config.json and adapter_model.safetensors (float32)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch
from safetensors.numpy import save as save_safetensors
from safetensors.torch import load as load_safetensors

from ..errors import InputError
from .adapter import PEFT_PREFIX, Adapter

CONFIG = "adapter_config.json"
WEIGHTS = "adapter_model.safetensors"

# The bounds services/weights/adapter-check.ts applies to every adapter the service keeps.
MAX_RANK = 1024
MAX_ALPHA = 65536.0

# PEFT settings a llama.cpp LoRA (one alpha, delta W = alpha / rank * B A) cannot express.
_UNSUPPORTED = {"use_dora": "DoRA", "use_rslora": "rsLoRA", "fan_in_fan_out": "fan_in_fan_out", "rank_pattern": "per-module ranks", "alpha_pattern": "per-module alphas"}


def write(adapter: Adapter, base_model_name: str) -> dict[str, bytes]:
    tensors: dict[str, np.ndarray] = {}
    for name, (a, b) in adapter.pairs.items():
        tensors[f"{PEFT_PREFIX}{name}.lora_A.weight"] = np.ascontiguousarray(a, dtype=np.float32)
        tensors[f"{PEFT_PREFIX}{name}.lora_B.weight"] = np.ascontiguousarray(b, dtype=np.float32)
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
    return {CONFIG: json.dumps(config, indent=2).encode(), WEIGHTS: save_safetensors(tensors, metadata={"format": "pt"})}


def read(files: dict[str, bytes]) -> Adapter:
    missing = [name for name in (CONFIG, WEIGHTS) if name not in files]
    if missing:
        raise InputError(f"a PEFT adapter needs {CONFIG} and {WEIGHTS}; missing {', '.join(missing)}")
    try:
        config = json.loads(files[CONFIG])
        tensors = load_safetensors(files[WEIGHTS])  # torch's loader: numpy has no bf16
    except Exception as error:
        raise InputError(f"unreadable PEFT adapter: {error}") from error
    rank, alpha = _settings(config)
    adapter = Adapter(rank=rank, alpha=alpha)
    for module, (a, b) in _pairs(tensors).items():
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != rank or b.shape[1] != rank:
            raise InputError(f"{module}: lora_A {tuple(a.shape)} and lora_B {tuple(b.shape)} are not a rank-{rank} LoRA pair (r in {CONFIG})")
        adapter.pairs[module] = (a, b)
    if not adapter.pairs:
        raise InputError("the PEFT adapter holds no LoRA tensors")
    return adapter


def _settings(config: Any) -> tuple[int, float]:
    """(rank, alpha) of a plain LoRA's adapter_config.json."""
    if not isinstance(config, dict):
        raise InputError(f"{CONFIG} is not a JSON object")
    if config.get("peft_type", "LORA") != "LORA":
        raise InputError(f"the adapter is {config.get('peft_type')!r}, not LORA")
    unsupported = [label for key, label in _UNSUPPORTED.items() if config.get(key)]
    if unsupported:
        raise InputError(f"{', '.join(unsupported)} adapters are not supported (plain LoRA only)")
    r, alpha = config.get("r"), config.get("lora_alpha")
    # JSON numbers: 8, 8.0 or 1e309 (inf); a bool is an int to Python, not a rank.
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not float(r).is_integer() or not 1 <= r <= MAX_RANK:
        raise InputError(f"{CONFIG}: r must be an integer from 1 to {MAX_RANK}, got {json.dumps(r)}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not np.isfinite(alpha) or not 0 < alpha <= MAX_ALPHA:
        raise InputError(f"{CONFIG}: lora_alpha must be a number above 0 and at most {MAX_ALPHA:g}, got {json.dumps(alpha)}")
    return int(r), float(alpha)


def _pairs(tensors: dict[str, torch.Tensor]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(A, B) per module as float32; any other tensor is refused rather than silently dropped."""
    halves: dict[str, dict[str, np.ndarray]] = {}
    others: list[str] = []
    for key, tensor in tensors.items():
        part = "A" if key.endswith(".lora_A.weight") else "B" if key.endswith(".lora_B.weight") else None
        if part is None or not tensor.is_floating_point():
            others.append(key)
            continue
        module = key.removesuffix(f".lora_{part}.weight").removeprefix(PEFT_PREFIX)
        halves.setdefault(module, {})[part] = tensor.float().numpy()
    if others:
        raise InputError(f"the PEFT adapter holds tensors that are not LoRA A/B weights (e.g. {sorted(others)[:3]}): not supported")
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for module, half in halves.items():
        if "A" not in half or "B" not in half:
            raise InputError(f"{module} has lora_{next(iter(half))} but no lora_{'B' if 'A' in half else 'A'}")
        pairs[module] = (half["A"], half["B"])
    return pairs
