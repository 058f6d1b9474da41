"""LoRA adapters on a loaded base model (PEFT): attaching a fresh one, the rules of a job's LoRA,
copying weights in and out, and a second adapter beside the trained one."""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator

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


def attach(loaded: LoadedModel, rank: int, alpha: float, targets: list[str], seed: int) -> PeftModel:
    """Wraps the base model with a fresh LoRA (PEFT's init: A kaiming-uniform, B zero), seeded."""
    unknown = [t for t in targets if t not in loaded.arch.default_targets]
    if unknown:
        raise InputError(f"LoRA target modules {unknown} do not exist in {loaded.facts.architecture}; choose from {list(loaded.arch.default_targets)}")
    torch.manual_seed(seed)
    return get_peft_model(loaded.model, peft_config(rank, alpha, targets))


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


def detach(model: PeftModel) -> None:
    """Removes the LoRA layers, leaving the cached base model as it was loaded."""
    model.unload()


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
        model.delete_adapter(name)


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
