"""A live adapter's state as files (format "state", role STATE): SAVE_STATE writes them, LOAD_STATE
reads them back, and the registry uses the same files for adapters it moves out of memory.

  adapter_state.json          {"format": "srl-live-adapter-state", "version": 1, "rank", "alpha",
                               "target_modules", "seed", "optimizer_steps", "optimizer": bool,
                               "grads": bool}
  adapter_state.safetensors   float32 tensors, by parameter name "<module>.lora_A.weight" /
                               "<module>.lora_B.weight" (Hugging Face module names, PEFT's A/B
                               shapes); with "optimizer": "<name>:exp_avg" and "<name>:exp_avg_sq"
                               (AdamW's moments, all at step optimizer_steps); with "grads" (disk
                               copies only, never SAVE_STATE's): "<name>:grad".

Values are stored exactly (float32, as trained), so a resumed run continues bit for bit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from safetensors.numpy import load as load_safetensors
from safetensors.numpy import save as save_safetensors

from ..errors import InputError
from ..lora.peft_files import MAX_ALPHA, MAX_RANK

FORMAT = "state"
CONFIG = "adapter_state.json"
TENSORS = "adapter_state.safetensors"
FILENAMES = (CONFIG, TENSORS)
_KIND = "srl-live-adapter-state"
_VERSION = 1
_MOMENTS = ("exp_avg", "exp_avg_sq")


@dataclass(frozen=True)
class LiveSettings:
    rank: int
    alpha: float
    targets: tuple[str, ...]  # Hugging Face module names, sorted
    seed: int


@dataclass
class AdapterState:
    settings: LiveSettings
    weights: dict[str, np.ndarray]  # parameter name -> float32
    steps: int = 0  # optimizer steps taken
    moments: dict[str, tuple[np.ndarray, np.ndarray]] | None = None  # (exp_avg, exp_avg_sq); None: none saved
    grads: dict[str, np.ndarray] | None = None  # gradients held since the last step; None: none saved


def write(state: AdapterState) -> dict[str, bytes]:
    s = state.settings
    config = {
        "format": _KIND,
        "version": _VERSION,
        "rank": s.rank,
        "alpha": s.alpha,
        "target_modules": list(s.targets),
        "seed": s.seed,
        "optimizer_steps": state.steps,
        "optimizer": state.moments is not None,
        "grads": state.grads is not None,
    }
    tensors = {name: np.ascontiguousarray(w, dtype=np.float32) for name, w in state.weights.items()}
    for name, pair in (state.moments or {}).items():
        for which, value in zip(_MOMENTS, pair):
            tensors[f"{name}:{which}"] = np.ascontiguousarray(value, dtype=np.float32)
    for name, grad in (state.grads or {}).items():
        tensors[f"{name}:grad"] = np.ascontiguousarray(grad, dtype=np.float32)
    return {CONFIG: json.dumps(config, indent=2).encode(), TENSORS: save_safetensors(tensors)}


def read(files: dict[str, bytes]) -> AdapterState:
    missing = [name for name in FILENAMES if name not in files]
    if missing:
        raise InputError(f"a state needs {' and '.join(FILENAMES)}; missing {', '.join(missing)}")
    try:
        config = json.loads(files[CONFIG])
        tensors = load_safetensors(files[TENSORS])
    except Exception as error:
        raise InputError(f"unreadable state files: {error}") from error
    settings, steps, has_moments, has_grads = _read_config(config)
    weights: dict[str, np.ndarray] = {}
    extras: dict[str, np.ndarray] = {}
    for key, value in tensors.items():
        if value.dtype != np.float32:
            raise InputError(f"{TENSORS}: {key} is {value.dtype}, not float32")
        if not np.isfinite(value).all():
            raise InputError(f"{TENSORS}: {key} holds a non-finite value")
        (extras if ":" in key else weights)[key] = value
    _check_weights(weights, settings)
    moments = {name: tuple(_take(extras, f"{name}:{m}", weights[name].shape) for m in _MOMENTS) for name in weights} if has_moments else None
    grads = {name: _take(extras, f"{name}:grad", weights[name].shape) for name in weights} if has_grads else None
    if extras:
        raise InputError(f"{TENSORS}: unexpected tensors {sorted(extras)[:3]}")
    return AdapterState(settings=settings, weights=weights, steps=steps, moments=moments, grads=grads)  # type: ignore[arg-type]


def _read_config(config: Any) -> tuple[LiveSettings, int, bool, bool]:
    if not isinstance(config, dict) or config.get("format") != _KIND:
        raise InputError(f"{CONFIG} is not a live adapter's state (format {_KIND!r})")
    if config.get("version") != _VERSION:
        raise InputError(f"{CONFIG}: version {config.get('version')!r} is not {_VERSION}")
    rank, alpha, targets, seed, steps = (config.get(k) for k in ("rank", "alpha", "target_modules", "seed", "optimizer_steps"))
    if not _is_int(rank) or not 1 <= rank <= MAX_RANK:
        raise InputError(f"{CONFIG}: rank must be an integer from 1 to {MAX_RANK}, got {json.dumps(rank)}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha <= MAX_ALPHA:
        raise InputError(f"{CONFIG}: alpha must be a number above 0 and at most {MAX_ALPHA:g}, got {json.dumps(alpha)}")
    if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and t for t in targets):
        raise InputError(f"{CONFIG}: target_modules must be a list of module names")
    if not _is_int(seed) or seed < 0 or not _is_int(steps) or steps < 0:
        raise InputError(f"{CONFIG}: seed and optimizer_steps must be integers >= 0")
    settings = LiveSettings(rank=int(rank), alpha=float(alpha), targets=tuple(sorted(set(targets))), seed=int(seed))
    return settings, int(steps), bool(config.get("optimizer")), bool(config.get("grads"))


def _check_weights(weights: dict[str, np.ndarray], settings: LiveSettings) -> None:
    if not weights:
        raise InputError(f"{TENSORS} holds no LoRA weights")
    for name, value in weights.items():
        module, _, part = name.rpartition(".lora_")
        if part not in ("A.weight", "B.weight") or module.rsplit(".", 1)[-1] not in settings.targets:
            raise InputError(f"{TENSORS}: {name} is not a LoRA weight of the targets {list(settings.targets)}")
        partner = f"{module}.lora_{'B' if part.startswith('A') else 'A'}.weight"
        if partner not in weights:
            raise InputError(f"{TENSORS}: {name} has no {partner}")
        if value.ndim != 2 or value.shape[0 if part.startswith("A") else 1] != settings.rank:
            raise InputError(f"{TENSORS}: {name} {value.shape} is not a rank-{settings.rank} LoRA weight")


def _take(extras: dict[str, np.ndarray], key: str, shape: tuple[int, ...]) -> np.ndarray:
    value = extras.pop(key, None)
    if value is None:
        raise InputError(f"{TENSORS}: missing {key}")
    if value.shape != shape:
        raise InputError(f"{TENSORS}: {key} is {value.shape}, its weight {shape}")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
