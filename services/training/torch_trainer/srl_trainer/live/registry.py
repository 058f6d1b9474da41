"""The live adapters by id. Each is a named PEFT adapter (its slot) on the loaded base model with
its AdamW, or, when idle past the memory budget (TRAINER_LIVE_ADAPTERS in memory at most, least
recently used out first) or when another base model is loaded, its state written to this trainer's
disk (state.py's files, held gradients included) and read back at its next command."""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from peft import PeftModel

from ..base_models import LoadedModel, ModelCache, ModelRef
from ..errors import InputError, NotFoundError
from ..lora.attach import attach, detach, lora_layers, wrapper_of
from . import optim, state
from .state import AdapterState, LiveSettings

log = logging.getLogger("srl_trainer")
DEFAULT_CAPACITY = 8
# Beyond the architecture's projections, a live adapter may train the unembedding (Tinker's
# train_unembed).
EXTRA_TARGETS = ("lm_head",)


def capacity_from_env() -> int:
    raw = os.environ.get("TRAINER_LIVE_ADAPTERS", "")
    try:
        value = int(raw) if raw else DEFAULT_CAPACITY
    except ValueError:
        raise ValueError(f"TRAINER_LIVE_ADAPTERS must be an integer >= 1, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"TRAINER_LIVE_ADAPTERS must be an integer >= 1, got {raw!r}")
    return value


@dataclass
class LiveAdapter:
    adapter_id: str
    slot: str  # the PEFT adapter name
    ref: ModelRef  # the base model it was created on
    settings: LiveSettings
    steps: int = 0
    optimizer: torch.optim.AdamW | None = None  # while in memory, once it has stepped
    on_disk: Path | None = None  # while out of memory
    last_used: int = 0
    loaded: LoadedModel | None = field(default=None, repr=False)  # while in memory


class Registry:
    def __init__(self, models: ModelCache, capacity: int, spill_root: Path) -> None:
        self.models = models
        self.capacity = capacity
        self.spill_root = spill_root
        self._spill_dir: Path | None = None
        self._adapters: dict[str, LiveAdapter] = {}
        self._slots = itertools.count(1)
        self._clock = itertools.count(1)
        models.on_switch = self._before_switch

    # --- lookup -------------------------------------------------------------------------------

    def get(self, adapter_id: str) -> LiveAdapter:
        entry = self._adapters.get(adapter_id)
        if entry is None:
            raise NotFoundError(f"no live adapter {adapter_id!r} on this trainer (never created, closed, or lost with a restarted trainer)")
        return entry

    def exists(self, adapter_id: str) -> bool:
        return adapter_id in self._adapters

    def in_memory(self) -> list[LiveAdapter]:
        return [e for e in self._adapters.values() if e.on_disk is None]

    # --- lifecycle ----------------------------------------------------------------------------

    def load_base(self, ref: ModelRef) -> LoadedModel:
        return self.models.get(ref)

    def add(self, adapter_id: str, ref: ModelRef, loaded: LoadedModel, restored: AdapterState) -> LiveAdapter:
        """A new adapter in memory from `restored` (CREATE: the seeded init, weights None), replacing
        a live one of the same id once it is in place."""
        entry = LiveAdapter(adapter_id, f"live_{next(self._slots)}", ref, restored.settings)
        self._make_room(keep=None)
        self._place(entry, loaded, restored)
        previous = self._adapters.get(adapter_id)
        if previous is not None:
            self._forget(previous)
        self._adapters[adapter_id] = entry
        return entry

    def activate(self, entry: LiveAdapter) -> tuple[LoadedModel, PeftModel]:
        """The adapter in memory, on its base model, as the active adapter."""
        loaded = self.models.get(entry.ref)  # may write every adapter on another base model out
        if entry.on_disk is not None:
            self._make_room(keep=entry)
            restored = state.read(_read_files(entry.on_disk))
            self._place(entry, loaded, restored)
            shutil.rmtree(entry.on_disk, ignore_errors=True)
            entry.on_disk = None
        wrapper = wrapper_of(loaded)
        assert wrapper is not None and entry.loaded is loaded
        wrapper.set_adapter(entry.slot)
        entry.last_used = next(self._clock)
        return loaded, wrapper

    def close(self, entry: LiveAdapter) -> None:
        self._forget(entry)
        del self._adapters[entry.adapter_id]

    # --- parameters and state -----------------------------------------------------------------

    @staticmethod
    def parameters(entry: LiveAdapter, wrapper: PeftModel) -> tuple[list[str], list[torch.nn.Parameter]]:
        """The adapter's parameters by name, sorted (the order of its optimizer and its files)."""
        named = {}
        for module, layer in lora_layers(wrapper, entry.slot).items():
            named[f"{module}.lora_A.weight"] = layer.lora_A[entry.slot].weight
            named[f"{module}.lora_B.weight"] = layer.lora_B[entry.slot].weight
        names = sorted(named)
        return names, [named[n] for n in names]

    def capture(self, entry: LiveAdapter, wrapper: PeftModel, with_optimizer: bool, with_grads: bool) -> AdapterState:
        names, params = self.parameters(entry, wrapper)
        as_array = lambda t: t.detach().float().cpu().numpy().copy()  # noqa: E731
        weights = {n: as_array(p) for n, p in zip(names, params)}
        moments = None
        if with_optimizer:
            moments = {}
            if entry.optimizer is not None and entry.steps > 0:
                for n, p in zip(names, params):
                    slot = entry.optimizer.state.get(p)
                    if slot:
                        moments[n] = (as_array(slot["exp_avg"]), as_array(slot["exp_avg_sq"]))
            if len(moments) != len(names):  # never stepped: nothing to keep but step 0
                moments = {n: (np.zeros_like(w), np.zeros_like(w)) for n, w in weights.items()}
        grads = None
        if with_grads and any(p.grad is not None for p in params):
            grads = {n: as_array(p.grad) if p.grad is not None else np.zeros_like(weights[n]) for n, p in zip(names, params)}
        return AdapterState(entry.settings, weights, entry.steps if with_optimizer else 0, moments, grads)

    # --- memory -------------------------------------------------------------------------------

    def _place(self, entry: LiveAdapter, loaded: LoadedModel, restored: AdapterState) -> None:
        """Attaches the slot (seeded init) and copies `restored`'s weights, gradients and moments in."""
        s = restored.settings
        wrapper = attach(loaded, s.rank, s.alpha, list(s.targets), s.seed, name=entry.slot, extra_targets=EXTRA_TARGETS)
        try:
            names, params = self.parameters(entry, wrapper)
            if restored.weights:
                if set(names) != set(restored.weights):
                    extra = sorted(set(restored.weights) - set(names))
                    missing = sorted(set(names) - set(restored.weights))
                    raise InputError(f"the state's weights do not fit this base model (missing {missing[:3]}, unexpected {extra[:3]})")
                with torch.no_grad():
                    for n, p in zip(names, params):
                        _copy(p, restored.weights[n], n)
            for n, p in zip(names, params):
                p.grad = None if restored.grads is None else torch.from_numpy(np.array(restored.grads[n])).to(p.device, p.dtype)
            entry.steps = restored.steps if restored.moments is not None else 0
            entry.optimizer = optim.new_optimizer(params, restored.moments, names, entry.steps) if entry.steps > 0 else None
        except Exception:
            detach(wrapper, entry.slot)
            raise
        entry.loaded = loaded
        entry.on_disk = None

    def _make_room(self, keep: LiveAdapter | None) -> None:
        """Writes the least recently used adapters out until one more fits in memory."""
        resident = sorted((e for e in self.in_memory() if e is not keep), key=lambda e: e.last_used)
        while resident and len(resident) >= self.capacity:
            self._spill(resident.pop(0))

    def _spill(self, entry: LiveAdapter) -> None:
        loaded = entry.loaded
        wrapper = wrapper_of(loaded) if loaded is not None else None
        if wrapper is None:
            raise RuntimeError(f"live adapter {entry.adapter_id!r} is not in memory")
        files = state.write(self.capture(entry, wrapper, with_optimizer=True, with_grads=True))
        target = self._dir() / entry.slot
        target.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (target / name).write_bytes(data)
        detach(wrapper, entry.slot)
        entry.optimizer = None
        entry.loaded = None
        entry.on_disk = target
        log.info("live adapter %s written to %s", entry.adapter_id, target)

    def _before_switch(self, outgoing: LoadedModel) -> None:
        for entry in self.in_memory():
            if entry.loaded is outgoing:
                self._spill(entry)

    def _forget(self, entry: LiveAdapter) -> None:
        if entry.on_disk is not None:
            shutil.rmtree(entry.on_disk, ignore_errors=True)
        elif entry.loaded is not None:
            wrapper = wrapper_of(entry.loaded)
            if wrapper is not None and entry.slot in wrapper.peft_config:
                detach(wrapper, entry.slot)
        entry.optimizer = None
        entry.loaded = None

    def _dir(self) -> Path:
        """This process's directory under the cache (those of trainers no longer running are removed)."""
        if self._spill_dir is None:
            self.spill_root.mkdir(parents=True, exist_ok=True)
            for stale in self.spill_root.glob("pid-*"):
                pid = stale.name.split("-")[1]
                if pid.isdigit() and not _alive(int(pid)):
                    shutil.rmtree(stale, ignore_errors=True)
            self._spill_dir = Path(tempfile.mkdtemp(dir=self.spill_root, prefix=f"pid-{os.getpid()}-"))
        return self._spill_dir


def default_spill_root() -> Path:
    base = os.environ.get("SRL_CACHE_DIR") or str(Path.home() / ".cache" / "srl")
    return Path(base) / "trainer-live-adapters"


def _copy(param: torch.nn.Parameter, value: np.ndarray, name: str) -> None:
    if tuple(value.shape) != tuple(param.shape):
        raise InputError(f"{name}: the state's shape {tuple(value.shape)} does not fit this base model's {tuple(param.shape)}")
    param.copy_(torch.from_numpy(np.ascontiguousarray(value)))


def _read_files(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in state.FILENAMES}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

