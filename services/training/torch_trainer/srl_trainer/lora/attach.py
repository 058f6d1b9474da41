"""LoRA adapters on a loaded base model (PEFT): attaching a fresh one, the rules of a job's LoRA,
copying weights in and out, and a second adapter beside the trained one.

A base model carries one PEFT wrapper at most, holding every adapter attached to it under its own
name: a job's ("default", and "reference" beside it), the live adapters of AdapterCommand (their
slots). Attaching adds a named adapter to that wrapper, detaching deletes it, and the last one out
unloads the wrapper, leaving the base model as it was loaded."""

from __future__ import annotations

import math
import warnings
import weakref
from contextlib import contextmanager
from typing import Iterable, Iterator

import numpy as np
import torch
from peft import PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer

from ..base_models import LoadedModel
from ..errors import InputError
from ..job_input import ROLE_PREVIOUS, JobInput
from . import gguf_files, peft_files
from .adapter import PEFT_PREFIX, Adapter
from .config import DEFAULT_ALPHA, DEFAULT_RANK, DEFAULT_SEED, peft_config


# The PEFT wrapper around each base model that has adapters attached (weakly: the model cache owns
# the base model; a dropped model takes its wrapper with it).
_wrappers: "weakref.WeakKeyDictionary[torch.nn.Module, PeftModel]" = weakref.WeakKeyDictionary()


def attach(loaded: LoadedModel, rank: int, alpha: float, targets: list[str], seed: int, name: str = "default", extra_targets: Iterable[str] = ()) -> PeftModel:
    """A fresh LoRA (PEFT's init: A kaiming-uniform, B zero), seeded, under `name` on the base
    model's wrapper, and made the active (and only trainable) adapter. `extra_targets`: modules
    allowed beyond the architecture's projections (live adapters: lm_head)."""
    allowed = [*loaded.arch.default_targets, *extra_targets]
    unknown = [t for t in targets if t not in allowed]
    if unknown:
        raise InputError(f"LoRA target modules {unknown} do not exist in {loaded.facts.architecture}; choose from {allowed}")
    config = peft_config(rank, alpha, targets)
    torch.manual_seed(seed)
    wrapper = _wrappers.get(loaded.model)
    if wrapper is None:
        wrapper = get_peft_model(loaded.model, config, adapter_name=name)
        _wrappers[loaded.model] = wrapper
    else:
        wrapper.add_adapter(name, config)
    wrapper.set_adapter(name)
    return wrapper


def attach_for_job(loaded: LoadedModel, job: JobInput) -> PeftModel:
    """The LoRA a job trains (or scores with): the previous adapter's shape and weights unless the
    job names another shape, which is refused; without a previous adapter, the contract's defaults."""
    spec = job.spec.lora
    previous = job.adapters.get(ROLE_PREVIOUS)
    prior = read_input(previous.files, previous.format, loaded) if previous else None
    rank = spec.rank or (prior.rank if prior else DEFAULT_RANK)
    alpha = spec.alpha or (prior.alpha if prior else DEFAULT_ALPHA)
    targets = list(spec.target_modules) or (sorted(prior.targets) if prior else list(loaded.arch.default_targets))
    if prior and (prior.rank != rank or not math.isclose(prior.alpha, alpha) or prior.targets != set(targets)):
        raise InputError(
            f"the model's adapter has rank {prior.rank}, alpha {prior.alpha:g} on {sorted(prior.targets)}; "
            f"a job cannot change them (asked rank {rank}, alpha {alpha:g} on {sorted(targets)})"
        )
    model = attach(loaded, rank, alpha, targets, spec.seed or DEFAULT_SEED)
    try:
        if prior:
            load_into(model, prior)
    except Exception:
        detach(model)
        raise
    return model


def detach(model: PeftModel, name: str = "default") -> None:
    """Deletes the adapter `name`; with it the last one, removes the LoRA layers, leaving the
    cached base model as it was loaded."""
    if set(model.peft_config) == {name}:
        base = model.unload()
        _wrappers.pop(base, None)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "adapter X was active, setting Y": callers activate their own
        model.delete_adapter(name)


def wrapper_of(loaded: LoadedModel) -> PeftModel | None:
    """The PEFT wrapper of the base model, when any adapter is attached to it."""
    return _wrappers.get(loaded.model)


@contextmanager
def base_only(loaded: LoadedModel) -> Iterator[None]:
    """The plain base model for the block, whatever adapters are attached to it."""
    wrapper = _wrappers.get(loaded.model)
    if wrapper is None:
        yield
        return
    with wrapper.disable_adapter():
        yield


@contextmanager
def active_adapter(model: PeftModel, adapter: Adapter, name: str) -> Iterator[None]:
    """`adapter` attached beside the trained one under `name` and active for the block."""
    model.add_adapter(name, peft_config(adapter.rank, adapter.alpha, sorted(adapter.targets)))
    try:
        load_into(model, adapter, name)
        model.set_adapter(name)
        yield
    finally:
        model.set_adapter("default")
        detach(model, name)


def lora_layers(model: PeftModel, adapter_name: str = "default") -> dict[str, LoraLayer]:
    out: dict[str, LoraLayer] = {}
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer) and adapter_name in module.lora_A:
            out[name.removeprefix(PEFT_PREFIX)] = module
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


def read_input(files: dict[str, bytes], fmt: str, loaded: LoadedModel) -> Adapter:
    """An input adapter's files, in either format, for this base model."""
    if fmt == "peft":
        return peft_files.read(files)
    if fmt == "gguf":
        data = files.get(gguf_files.FILENAME) or next(iter(files.values()), None)
        if data is None:
            raise InputError("empty GGUF adapter")
        return gguf_files.read(data, loaded, _candidate_modules(loaded))
    raise InputError(f"unknown adapter format {fmt!r}")


def _candidate_modules(loaded: LoadedModel) -> list[str]:
    targets = set(loaded.arch.default_targets)
    return [name for name, _ in loaded.model.named_modules() if name.rsplit(".", 1)[-1] in targets]
