"""Each AdapterCommand kind on the registry's adapters. Everything a command's input can get wrong
is checked before the adapter is touched (INVALID_ARGUMENT leaves it as it was); a FORWARD_BACKWARD
that fails half-way puts the gradients it had back."""

from __future__ import annotations

import functools
import math
import threading
from typing import Any, Callable, Iterator

from .. import proto
from ..base_models import LoadedModel, ModelRef, model_ref
from ..errors import AlreadyExistsError, CancelledError, InputError
from ..gguf_meta import read_meta
from ..architectures import gguf_tensor_namer
from ..lora.attach import read_adapter
from ..lora.config import DEFAULT_ALPHA, DEFAULT_RANK, DEFAULT_SEED
from ..lora.output import FORMATS, chunks, output_files
from ..lora.peft_files import MAX_ALPHA, MAX_RANK
from ..resources import plan, without_gradients
from ..tinker_losses import check_inputs, resolve_config
from . import compute, optim, state
from .command_input import CommandInput, check_vocabulary
from .registry import EXTRA_TARGETS, LiveAdapter, Registry
from .state import AdapterState, LiveSettings

pb, _ = proto.load()
# Floats per outputs response (two per position): well under the 8 MiB message limit.
OUTPUT_BATCH_FLOATS = 1 << 18


class LiveCommands:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def run(self, got: CommandInput, cancelled: threading.Event) -> Iterator[Any]:
        def check() -> None:
            if cancelled.is_set():
                raise CancelledError("the command was cancelled")

        handler: Callable[[CommandInput, Callable[[], None]], Iterator[Any]] | None = getattr(self, f"_{got.kind_name.lower()}", None)
        if handler is None:
            raise InputError(f"command.kind {got.kind_name} is not one this trainer runs")
        yield from handler(got, check)

    # --- CREATE, LOAD_STATE, CLOSE --------------------------------------------------------------

    def _create(self, got: CommandInput, check: Callable[[], None]) -> Iterator[Any]:
        command = got.command
        if self.registry.exists(command.adapter_id):
            raise AlreadyExistsError(f"live adapter {command.adapter_id!r} exists already (CLOSE it, or LOAD_STATE to replace it)")
        ref = _base_ref(command)
        loaded = self.registry.load_base(ref)
        settings = _settings(command.lora, loaded)
        entry = self.registry.add(command.adapter_id, ref, loaded, AdapterState(settings, weights={}))
        yield _result(entry, loaded, with_lora=True)

    def _load_state(self, got: CommandInput, check: Callable[[], None]) -> Iterator[Any]:
        command = got.command
        restored = state.read(got.files)
        _same_settings(command.lora, restored.settings)
        if not command.with_optimizer:
            restored.moments, restored.steps = None, 0
        restored.grads = None  # held gradients are dropped
        ref = _base_ref(command)
        loaded = self.registry.load_base(ref)
        _check_targets(list(restored.settings.targets), loaded)
        entry = self.registry.add(command.adapter_id, ref, loaded, restored)
        yield _result(entry, loaded, with_lora=True)

    def _close(self, got: CommandInput, check: Callable[[], None]) -> Iterator[Any]:
        entry = self.registry.get(got.command.adapter_id)
        self.registry.close(entry)
        yield pb.AdapterCommandResponse(result=pb.AdapterCommandResult(optimizer_steps=entry.steps))

    # --- FORWARD, FORWARD_BACKWARD, OPTIM_STEP ----------------------------------------------------

    def _forward(self, got: CommandInput, check: Callable[[], None]) -> Iterator[Any]:
        yield from self._forwards(got, check, backward=False)

    def _forward_backward(self, got: CommandInput, check: Callable[[], None]) -> Iterator[Any]:
        yield from self._forwards(got, check, backward=True)

    def _forwards(self, got: CommandInput, check: Callable[[], None], backward: bool) -> Iterator[Any]:
        command = got.command
        entry = self.registry.get(command.adapter_id)
        config = resolve_config(command.loss_fn, dict(command.loss_fn_config), dict(command.loss_fn_config_text))
        for i, datum in enumerate(got.datums):
            check_inputs(command.loss_fn, i, len(datum.tokens), datum.inputs)
        loaded, wrapper = self.registry.activate(entry)
        check_vocabulary(got.datums, loaded.model.config.vocab_size)
        # Only a backward pass touches the held gradients: keep them to put back if it fails.
        params = self.registry.parameters(entry, wrapper)[1] if backward else []
        held = [p.grad.clone() if p.grad is not None else None for p in params]
        try:
            device = loaded.model.device
            resources = plan(command.resources, loaded, wrapper, autocast=device.type == "cuda") if backward else without_gradients(command.resources, device)
            result = compute.run(wrapper, got.datums, command.loss_fn, config, resources, backward, check)
        except BaseException:
            for p, grad in zip(params, held):  # the adapter as it was
                p.grad = grad
            raise
        batch: list[Any] = []
        floats = 0
        for lp, loss in zip(result.logprobs, result.elementwise_loss):
            if batch and floats + 2 * len(lp) > OUTPUT_BATCH_FLOATS:
                yield pb.AdapterCommandResponse(outputs=pb.AdapterDatumOutputBatch(outputs=batch))
                batch, floats = [], 0
            outputs = {"logprobs": pb.FloatList(values=lp.tolist()), "elementwise_loss": pb.FloatList(values=loss.tolist())}
            batch.append(pb.AdapterDatumOutput(outputs=outputs))
            floats += 2 * len(lp)
        if batch:
            yield pb.AdapterCommandResponse(outputs=pb.AdapterDatumOutputBatch(outputs=batch))
        yield _result(entry, loaded, metrics={"loss:sum": result.loss_sum})

    def _optim_step(self, got: CommandInput, check: Callable[[], None]) -> Iterator[Any]:
        command = got.command
        entry = self.registry.get(command.adapter_id)
        optim.check_adam(command.adam)
        loaded, wrapper = self.registry.activate(entry)
        names, params = self.registry.parameters(entry, wrapper)
        if entry.optimizer is None:
            entry.optimizer = optim.new_optimizer(params, None, names, 0)
        metrics, applied = optim.step(entry.optimizer, params, command.adam)
        if applied:
            entry.steps += 1
        yield _result(entry, loaded, metrics=metrics)

    # --- SAVE_STATE, EXPORT -----------------------------------------------------------------------

    def _save_state(self, got: CommandInput, check: Callable[[], None]) -> Iterator[Any]:
        entry = self.registry.get(got.command.adapter_id)
        loaded, wrapper = self.registry.activate(entry)
        files = state.write(self.registry.capture(entry, wrapper, with_optimizer=got.command.with_optimizer, with_grads=False))
        for name, data in chunks(files):
            yield pb.AdapterCommandResponse(file=pb.FileChunk(role=pb.ADAPTER_ROLE_STATE, format=state.FORMAT, filename=name, data=data))
        yield _result(entry, loaded)

    def _export(self, got: CommandInput, check: Callable[[], None]) -> Iterator[Any]:
        formats = list(got.command.output_formats)
        unknown = [f for f in formats if f not in FORMATS]
        if unknown:
            raise InputError(f"output_formats: {unknown[0]!r} is not one of {', '.join(FORMATS)}")
        entry = self.registry.get(got.command.adapter_id)
        loaded, wrapper = self.registry.activate(entry)
        adapter = read_adapter(wrapper, entry.slot)
        for fmt, files in output_files(adapter, loaded, entry.ref, formats):
            for name, data in chunks(files):
                yield pb.AdapterCommandResponse(file=pb.FileChunk(role=pb.ADAPTER_ROLE_OUTPUT, format=fmt, filename=name, data=data))
        yield _result(entry, loaded)


def _result(entry: LiveAdapter, loaded: LoadedModel, metrics: dict[str, float] | None = None, with_lora: bool = False) -> Any:
    result = pb.AdapterCommandResult(metrics=metrics or {}, optimizer_steps=entry.steps, load_seconds=loaded.load_seconds)
    if with_lora:
        s = entry.settings
        result.lora.CopyFrom(pb.LoraConfig(rank=s.rank, alpha=s.alpha, target_modules=list(s.targets), seed=s.seed))
    return pb.AdapterCommandResponse(result=result)


def _base_ref(command: Any) -> ModelRef:
    base = command.base_model
    if not (base.gguf_path or base.source):
        raise InputError(f"command.base_model (its gguf_path or source) is required by {pb.AdapterCommandKind.Name(command.kind).removeprefix('ADAPTER_COMMAND_KIND_')}")
    return model_ref(base)


def _settings(lora: Any, loaded: LoadedModel) -> LiveSettings:
    """CREATE's LoRA: the contract's defaults for unset fields, every projection when no targets."""
    rank = lora.rank or DEFAULT_RANK
    alpha = lora.alpha or DEFAULT_ALPHA
    if not 1 <= rank <= MAX_RANK:
        raise InputError(f"lora.rank must be from 1 to {MAX_RANK}, got {rank}")
    if not math.isfinite(alpha) or not 0 < alpha <= MAX_ALPHA:
        raise InputError(f"lora.alpha must be above 0 and at most {MAX_ALPHA:g}, got {alpha}")
    targets = list(lora.target_modules) or list(loaded.arch.default_targets)
    if len(set(targets)) != len(targets):
        raise InputError(f"lora.target_modules names a module twice: {targets}")
    _check_targets(targets, loaded)
    return LiveSettings(rank=rank, alpha=float(alpha), targets=tuple(sorted(targets)), seed=lora.seed or DEFAULT_SEED)


def _same_settings(lora: Any, saved: LiveSettings) -> None:
    """LOAD_STATE's LoRA settings, where sent, must be the saved state's (its seed is not read)."""
    if lora.rank and lora.rank != saved.rank:
        raise InputError(f"lora.rank {lora.rank} is not the state's {saved.rank}")
    if lora.alpha and not math.isclose(lora.alpha, saved.alpha):
        raise InputError(f"lora.alpha {lora.alpha:g} is not the state's {saved.alpha:g}")
    if lora.target_modules and set(lora.target_modules) != set(saved.targets):
        raise InputError(f"lora.target_modules {sorted(lora.target_modules)} are not the state's {list(saved.targets)}")


def _check_targets(targets: list[str], loaded: LoadedModel) -> None:
    allowed = [*loaded.arch.default_targets, *EXTRA_TARGETS]
    unknown = [t for t in targets if t not in allowed]
    if unknown:
        raise InputError(f"lora.target_modules: {unknown[0]!r} is not a module the trainer adapts in {loaded.facts.architecture} (choose from {', '.join(allowed)})")
    if "lm_head" in targets and not _has_output_tensor(loaded.key, loaded.facts.path, loaded.facts.architecture, loaded.facts.n_blocks):
        raise InputError(
            "lora.target_modules: lm_head (train_unembed) cannot be trained on this base model: its GGUF has no output.weight "
            "(the unembedding is tied to the token embedding, token_embd.weight), and llama.cpp would apply a LoRA under that "
            "name to the input embedding, in the embedding's layout, not to the output projection. Leave lm_head out "
            "(train_unembed=false) for this model"
        )


@functools.lru_cache(maxsize=16)
def _has_output_tensor(key: tuple[Any, ...], path: str, architecture: str, n_blocks: int) -> bool:
    """Whether the GGUF (`key`: the model cache's, file identity included) has the untied output
    projection a LoRA on lm_head exports to."""
    try:
        name = gguf_tensor_namer(architecture, n_blocks)("lm_head")
    except ValueError:  # architectures whose llama.cpp graph always ties it (gemma)
        return False
    return f"{name}.weight" in read_meta(path).tensors
