"""The benchmark's results as a markdown summary (the table of the h200 summaries: throughput, peak
memory, first step, losses, ratios to the plain loop) and the step-1 loss check. Tolerates any part
missing: a configuration that failed or was not run shows as such."""

from __future__ import annotations

import math
import os
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .configs import CONFIGS

GIB, MIB = float(1 << 30), float(1 << 20)


def package_versions() -> dict[str, str]:
    from ..versions import versions

    out = versions()
    for package in ("grpcio", "accelerate", "safetensors"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "missing"
    return out


def fmt_bytes(value: Any) -> str:
    if not isinstance(value, (int, float)) or value <= 0:
        return "-"
    if value >= GIB:
        return f"{value / GIB:.2f} GiB"
    return f"{value / MIB:.0f} MiB" if value >= MIB else f"{value / 1024:.0f} KiB"


def fmt(value: Any, digits: int = 2) -> str:
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "-"
    return f"{value:.{digits}f}"


def params(n: int) -> str:
    return f"{n / 1e9:.3f} B" if n >= 1e9 else f"{n / 1e6:.3f} M"


def ratio(a: Any, b: Any) -> str:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not b:
        return "-"
    return f"{a / b:.2f}x"


def peak_memory(name: str, entry: dict[str, Any], cuda: bool) -> tuple[Any, Any, str]:
    """(peak, peak reserved, where the peak comes from). CPU: peak RSS of the measured process, for
    the plain loop and the trainer alike. CUDA: the allocator's peak in the measured process (the
    trainer's from Describe after the job; each configuration has a process of its own)."""
    if not cuda:
        return entry.get("peak_rss_bytes"), None, "peak RSS of the process"
    if name == "plain":
        return entry.get("peak_allocated_bytes"), entry.get("peak_reserved_bytes"), "torch.cuda.max_memory_allocated"
    described = (entry.get("describe_after") or {}).get("peak_device_bytes")
    return (described, None, "the trainer's Describe peak_device_bytes") if described else (None, None, "-")


def loss_checks(results: dict[str, Any], tolerance: float) -> list[dict[str, Any]]:
    """Step-1 loss of each trainer configuration against the plain loop's. The LoRA's B starts at
    zero, so step 1 is the base model's loss on the same rows: equal up to the dtype's noise."""
    configs = results.get("configs", {})
    plain = (configs.get("plain") or {}).get("losses") or []
    checks: list[dict[str, Any]] = []
    for name, entry in configs.items():
        losses = entry.get("losses") or []
        if name == "plain" or not plain or not losses or losses[0] is None:
            continue
        diff = abs(losses[0] - plain[0])
        relative = diff / abs(plain[0]) if plain[0] else math.inf
        n = min(len(plain), len(losses))
        checks.append(
            {
                "config": name,
                "trainer": losses[0],
                "plain": plain[0],
                "relative_diff": relative,
                "ok": relative <= tolerance,
                "max_trajectory_diff": max(abs(a - b) for a, b in zip(plain[:n], losses[:n])),
                "steps_compared": n,
            }
        )
    return checks


def markdown(results: dict[str, Any], versions: dict[str, str], tolerance: float) -> str:
    model = results.get("model", {})
    settings = results.get("settings", {})
    configs = results.get("configs", {})
    cuda = str(model.get("device", "")).startswith("cuda")
    lines = [f"# Trainer benchmark: {model.get('about', results.get('options', {}).get('shape', '?'))} shape, {results.get('started', '')}", ""]
    if cuda:
        device = f"{model.get('gpu', '?')} ({fmt_bytes(model.get('gpu_memory_bytes'))}), {model.get('device')}, CUDA {model.get('torch_cuda')}"
    else:
        device = f"cpu, {results.get('threads')} threads"
    lines.append(f"- device: {device}; {os.cpu_count()} CPUs on the host")
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    if model and "error" not in model:
        lines.append(
            f"- model: {model['about']} shape ({model['family']}), random weights, {params(model['parameters'])} parameters, "
            f"{model['layers']} layers, {model['dtype']}; safetensors {fmt_bytes(model.get('safetensors_bytes'))}, GGUF {model.get('gguf_weights')}; "
            f"built in {fmt(model.get('build_s'), 1)} s, saved in {fmt(model.get('save_safetensors_s'), 1)} s"
        )
    if settings:
        lines.append(
            f"- batch: {settings['rows']} rows x {settings['seq']} tokens ({settings['step_tokens']} per step, second half of each row trained), "
            f"same rows every step, {settings['steps']} steps (tokens/s from steps 2..{settings['steps']}); LoRA r{settings['rank']}/alpha{settings['alpha']:g} "
            f"on {','.join(t.removesuffix('_proj') for t in settings['targets'])}, AdamW lr {settings['lr']:g}, clipping 1.0"
        )
    knobs = {k: v for k, v in os.environ.items() if k.startswith("TRAINER_") and k != "TRAINER_SECRET"}
    if knobs:
        lines.append(f"- trainer environment (changes its defaults): {knobs}")
    lines += ["", "| configuration | tokens/s | first step s | peak memory | peak reserved | loss 1 | loss last | tokens/s vs plain | peak vs plain |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    plain = configs.get("plain", {})
    plain_peak = peak_memory("plain", plain, cuda)[0] if plain else None
    sources: dict[str, str] = {}
    for name, entry in configs.items():
        label = CONFIGS[name].label
        if name == "plain":
            label += f" ({plain.get('dtype', '?')}, {plain.get('rows_per_pass', '?')} rows per pass)"
        losses = entry.get("losses") or []
        if "error" in entry and not losses:
            lines.append(f"| {label} | ERROR: {str(entry['error'])[:200]} | | | | | | | |")
            continue
        peak, reserved, source = peak_memory(name, entry, cuda)
        sources[name] = source
        tps = entry.get("steady_tokens_per_s")
        lines.append(
            f"| {label} | {fmt(tps, 0)} | {fmt(entry.get('first_step_s'))} | {fmt_bytes(peak)} | {fmt_bytes(reserved)} | "
            f"{fmt(losses[0] if losses else None, 4)} | {fmt(losses[-1] if losses else None, 4)} | {ratio(tps, plain.get('steady_tokens_per_s'))} | {ratio(peak, plain_peak)} |"
        )
    lines.append("")
    lines.append("peak memory: " + "; ".join(f"{name}: {source}" for name, source in sources.items()))
    if plain.get("out_of_memory"):
        lines.append(f"\nplain loop out of memory: {plain['out_of_memory']} (ran with {plain.get('rows_per_pass')} rows per pass)")
    for name, entry in configs.items():
        started = {k: v for k, v in (entry.get("started") or {}).items() if k not in ("num_steps", "device", "threads", "load_seconds")}
        if name != "plain" and started:  # what the trainer says it chose (fields as its contract has them)
            lines.append(f"- {name}, the trainer's settings: {started.get('resources') or started}")
    for name, entry in configs.items():
        if name != "plain" and entry.get("adapter"):
            a = entry["adapter"]
            lines.append(
                f"- {name}: trainer's own tokens/s {fmt(entry.get('trainer_steady_tokens_per_s'), 0)}, "
                f"model load {fmt((entry.get('started') or {}).get('load_seconds'), 1)} s; adapter: {a.get('peft_tensors', '-')} PEFT tensors, finite {a.get('finite', '-')}, "
                f"max|B| {fmt(a.get('max_abs_b'), 5)}, GGUF tensors {a.get('gguf_tensors', '-')}; trained {entry.get('trained', '-')}"
            )
    lines += ["", "## Step-1 loss (LoRA B = 0: the base model) and trajectories, trainer vs plain", ""]
    checks = results.get("checks", [])
    for c in checks:
        lines.append(
            f"- {c['config']}: step 1 trainer {c['trainer']:.5f} vs plain {c['plain']:.5f}, relative diff {c['relative_diff']:.2e} "
            f"({'ok' if c['ok'] else 'MISMATCH'}, tolerance {tolerance:g}); max |trainer - plain| over {c['steps_compared']} steps {c['max_trajectory_diff']:.5f}"
        )
    if not checks:
        lines.append("- no comparison (the plain loop or every trainer configuration missing)")
    for name, entry in configs.items():
        if entry.get("losses"):
            lines.append(f"- {name} losses {[round(x, 4) for x in entry['losses'] if x is not None]}")
    if results.get("errors"):
        lines += ["", "## Errors", ""] + [f"- {e}" for e in results["errors"]]
    return "\n".join(lines) + "\n"
