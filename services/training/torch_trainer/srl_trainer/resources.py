"""Memory and speed settings of a job: the micro-batch (tokens per forward/backward pass) and
layer checkpointing, derived from the device the trainer computes on unless the job's hints or
the process's environment fix them.

The derivation: a micro-batch of about TARGET tokens keeps the device busy. On a GPU the target
depends on the model's size, since what a pass must amortise (kernel launches, per-layer work
that does not grow with tokens) is a smaller share of a larger model's pass. Measured on an H200
(torch 2.11, bf16, LoRA r16 on every projection, 16 x 1024 tokens per step): a 1B Llama ran at
47.8k tokens/s with 16,384-token micro-batches and 32.5k with 4,096; an 8B ran at 11.1k with
13,952 and 10.8k with 4,096, which took 0.41x the memory. So the GPU target is about 3.3e13
parameter-tokens per pass (8B x 4,096), between 2,048 and 16,384 tokens. A CPU is busy from a few
hundred tokens on. The job gets the largest micro-batch up to that target whose activations
(activation_cost.py, measured on the model) fit in the budget: a share of the device's free
memory less what the log-prob head and the optimizer need beside them. Layer checkpointing, which
costs about a quarter of the speed, is chosen only when not even a micro-batch of FLOOR tokens (or
the target, when smaller) would fit without it."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from .activation_cost import ActivationCost, activation_cost
from .base_models import LoadedModel
from .device_memory import DeviceMemory, device_memory

# Positions whose logits are computed at once: 256 x a 150k vocabulary is 150 MB in f32.
DEFAULT_LOGITS_CHUNK_TOKENS = int(os.environ.get("TRAINER_LOGITS_CHUNK_TOKENS", "256"))
# Fixed settings for every job of this process (0 / "auto": derived from the device).
FIXED_MICRO_BATCH_TOKENS = int(os.environ.get("TRAINER_MICRO_BATCH_TOKENS", "0") or 0)
FIXED_GRADIENT_CHECKPOINTING = os.environ.get("TRAINER_GRADIENT_CHECKPOINTING", "auto")
FIXED_ACTIVATION_BUDGET_BYTES = int(os.environ.get("TRAINER_ACTIVATION_BUDGET_MB", "0") or 0) << 20
# The share of the free memory a job's activations may take: all but a margin on a GPU the trainer
# owns; half of the host's, which it shares with the engines and the database.
MEMORY_SHARE = {"cuda": 0.85, "cpu": 0.5}
TARGET_TOKENS = {"cuda": 16384, "cpu": 2048}  # the most; also the scoring micro-batch
GPU_MIN_TARGET_TOKENS = 2048
GPU_PARAMETER_TOKENS_PER_PASS = 3.3e13
FLOOR_TOKENS = {"cuda": 4096, "cpu": 512}


@dataclass(frozen=True)
class Resources:
    micro_batch_tokens: int
    logits_chunk_tokens: int
    gradient_checkpointing: str  # auto | on | off
    # "auto": a pack is checkpointed when its activations would pass this many bytes.
    activation_budget_bytes: float = float("inf")
    bytes_per_token: float = 0.0
    # How the settings were chosen, for the start-up log and the job's first event.
    reason: str = ""

    def checkpoint(self, pack_tokens: int) -> bool:
        if self.gradient_checkpointing == "on":
            return True
        if self.gradient_checkpointing == "off":
            return False
        return pack_tokens * self.bytes_per_token > self.activation_budget_bytes


def hinted(hints: object) -> tuple[int, int, str]:
    """(micro-batch tokens or 0, logits chunk, checkpointing mode) from the job's hints and the
    environment; 0 / "auto" leave the choice to the device."""
    micro = getattr(hints, "micro_batch_tokens", 0) or FIXED_MICRO_BATCH_TOKENS
    chunk = getattr(hints, "logits_chunk_tokens", 0) or DEFAULT_LOGITS_CHUNK_TOKENS
    mode = getattr(hints, "gradient_checkpointing", "") or FIXED_GRADIENT_CHECKPOINTING
    return max(0, micro), max(1, chunk), mode if mode in ("auto", "on", "off") else "auto"


def plan(hints: object, loaded: LoadedModel, model: torch.nn.Module, autocast: bool) -> Resources:
    """The job's settings on this device for `model` as it will train (its adapter attached)."""
    micro, chunk, mode = hinted(hints)
    device = next(model.parameters()).device
    memory = device_memory(device)
    cost = activation_cost(model, loaded.key, autocast)
    parameters = sum(p.numel() for p in model.parameters())
    return choose(micro, chunk, mode, memory, cost, _beside_activations(model, chunk, loaded), device.type, parameters)


def target_tokens(device_type: str, parameters: int) -> int:
    """The micro-batch that keeps the device busy for a model of this many parameters."""
    if device_type != "cuda" or parameters <= 0:
        return TARGET_TOKENS["cuda" if device_type == "cuda" else "cpu"]
    return _round(int(min(max(GPU_PARAMETER_TOKENS_PER_PASS / parameters, GPU_MIN_TARGET_TOKENS), TARGET_TOKENS["cuda"])))


def device_summary(device: torch.device) -> str:
    """For the start-up log: the device's memory and how jobs will size their micro-batches."""
    kind = "cuda" if device.type == "cuda" else "cpu"
    memory = device_memory(device)
    fixed = [f"{name}={value}" for name, value in (("TRAINER_MICRO_BATCH_TOKENS", FIXED_MICRO_BATCH_TOKENS), ("TRAINER_GRADIENT_CHECKPOINTING", FIXED_GRADIENT_CHECKPOINTING if FIXED_GRADIENT_CHECKPOINTING != "auto" else 0), ("TRAINER_ACTIVATION_BUDGET_MB", FIXED_ACTIVATION_BUDGET_BYTES >> 20)) if value]
    return (
        f"{memory.device}: {memory.free_bytes / 2**30:.1f} of {memory.total_bytes / 2**30:.1f} GiB free; each job takes micro-batches of up to "
        f"{TARGET_TOKENS[kind]} tokens{' (fewer for models over 2B parameters)' if kind == 'cuda' else ''} within {MEMORY_SHARE[kind]:.0%} of the free memory, from its model's measured activation cost"
        + (f" (fixed here: {', '.join(fixed)})" if fixed else "")
    )


def without_gradients(hints: object, device: torch.device) -> Resources:
    """Scoring: no activations are kept, so a micro-batch is the device's target size."""
    micro, chunk, _ = hinted(hints)
    micro = micro or TARGET_TOKENS["cuda" if device.type == "cuda" else "cpu"]
    return Resources(micro_batch_tokens=micro, logits_chunk_tokens=chunk, gradient_checkpointing="off", reason=f"{micro} tokens per micro-batch without gradients")


def choose(micro: int, chunk: int, mode: str, memory: DeviceMemory, cost: ActivationCost, beside: float, device_type: str, parameters: int = 0) -> Resources:
    kind = "cuda" if device_type == "cuda" else "cpu"
    target = target_tokens(kind, parameters)
    budget = FIXED_ACTIVATION_BUDGET_BYTES or max(memory.free_bytes * MEMORY_SHARE[kind] - beside, 0.0)
    fit = int(budget // cost.bytes_per_token) if cost.bytes_per_token > 0 else target
    fit_checkpointed = int(budget // cost.checkpointed_bytes_per_token) if cost.checkpointed_bytes_per_token > 0 else fit
    derived = micro == 0
    if derived:
        checkpointed = mode == "on" or (mode == "auto" and fit < min(FLOOR_TOKENS[kind], target))
        micro = max(_round(min(target, fit_checkpointed if checkpointed else fit)), 128)
        if checkpointed:
            mode = "on"
    source = "derived from the device" if derived else "micro-batch fixed by the job or TRAINER_MICRO_BATCH_TOKENS"
    checkpointing = "auto (only a pack past the budget)" if mode == "auto" else mode
    reason = (
        f"{micro} tokens per micro-batch, checkpointing {checkpointing} ({source}): {memory.device} has "
        f"{memory.free_bytes / 2**30:.1f} of {memory.total_bytes / 2**30:.1f} GiB free, activations may take "
        f"{budget / 2**30:.1f} GiB at {cost.bytes_per_token / 2**20:.3f} MiB per token "
        f"({cost.checkpointed_bytes_per_token / 2**20:.3f} checkpointed)"
    )
    return Resources(micro_batch_tokens=micro, logits_chunk_tokens=chunk, gradient_checkpointing=mode, activation_budget_bytes=budget, bytes_per_token=cost.bytes_per_token, reason=reason)


def _beside_activations(model: torch.nn.Module, chunk: int, loaded: LoadedModel) -> float:
    """Memory a step needs beside the activations: a logits chunk's f32 temporaries (logits,
    probabilities, their gradient) and the adapter's gradients and AdamW moments."""
    vocab = int(getattr(loaded.model.config, "vocab_size", 0) or 0)
    trainable = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    return 3 * chunk * vocab * 4 + 3 * trainable


def _round(tokens: int) -> int:
    """Down to a multiple of 128 (kernels favour such shapes; the plan is not that precise)."""
    return tokens - tokens % 128 if tokens >= 128 else tokens
