"""The benchmark from start to end: the model built in its own process, then each configuration in
a fresh process (the plain loop, or a trainer server driven through gRPC), measured one after the
other so that none shares the device or the CPUs with another. The trainer processes start while
the model is built and wait idle (trainer_run.TrainerProcess). This process imports neither torch
nor CUDA: every number comes from a child."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import trainer_run
from .configs import Config, pick
from .processes import run_child
from .settings import Settings


@dataclass(frozen=True)
class Options:
    shape: str = "llama-1b"
    rows: int = 16
    seq: int = 1024
    steps: int = 6
    device: str = "auto"
    configs: str = ""
    out: str = ""
    work: str = ""  # where the model is written (a 32B shape needs ~61 GiB of safetensors); default: a temp dir
    keep: bool = False
    layers: int = 0
    threads: int = 0
    gguf_weights: bool = False
    timeout: float = 1800.0  # per child process
    loss_tolerance: float = 0.0  # relative, step-1 loss trainer vs plain; 0: 1e-3 on CPU, 5e-3 on CUDA (bf16)


def _child_result(command: list[str], result: Path, log: Path, timeout: float) -> dict[str, Any]:
    result.unlink(missing_ok=True)
    code = run_child(command, log, timeout)
    if code == 0 and result.exists():
        return dict(json.loads(result.read_text()))
    tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
    return {"error": f"exit {code}: {' | '.join(tail)[-400:]} (log {log})"}


def run_bench(options: Options) -> dict[str, Any]:
    configs: list[Config] = pick(options.configs)
    threads = options.threads or len(os.sched_getaffinity(0))
    owned = not options.work
    work = Path(options.work or tempfile.mkdtemp(prefix="srl-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    logs = Path(options.out) / "logs" if options.out else work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    results: dict[str, Any] = {"options": asdict(options), "threads": threads, "configs": {}, "errors": [], "started": time.strftime("%Y-%m-%d %H:%M:%S %z")}
    servers = {c.name: trainer_run.TrainerProcess(c.name, options.device, threads, work, logs / f"{c.name}.log") for c in configs if c.kind == "trainer"}
    try:
        for server in servers.values():
            server.launch()
        print(f"bench: building the {options.shape} model ({options.device}) in {work}", file=sys.stderr, flush=True)
        command = [py, "-m", "srl_trainer.bench.model_files", "--shape", options.shape, "--device", options.device, "--out", str(work), "--result", str(work / "model.json")]
        if options.layers:
            command += ["--layers", str(options.layers)]
        if options.gguf_weights:
            command.append("--gguf-weights")
        began = time.perf_counter()
        model = _child_result(command, work / "model.json", logs / "model.log", options.timeout)
        model["wall_s"] = time.perf_counter() - began
        results["model"] = model
        if "error" in model:
            results["errors"].append(f"model: {model['error']}")
            return results
        device = str(model["device"])
        settings = Settings(rows=options.rows, seq=options.seq, steps=options.steps, vocab_size=int(model["vocab_size"]))
        settings.write(work / "settings.json")
        results["settings"] = asdict(settings) | {"step_tokens": settings.step_tokens}
        for server in servers.values():  # no import still running beside the first measurement
            try:
                server.wait_ready(min(options.timeout, 300.0))
            except RuntimeError:
                pass  # reported by its configuration
        for config in configs:
            print(f"bench: {config.name} ({config.label})", file=sys.stderr, flush=True)
            log = logs / f"{config.name}.log"
            began = time.perf_counter()
            if config.kind == "plain":
                command = [py, "-m", "srl_trainer.bench.plain_loop", "--model", str(model["model_dir"]), "--device", device, "--settings", str(work / "settings.json"), "--threads", str(threads), "--result", str(work / "plain.json")]
                entry = _child_result(command, work / "plain.json", log, options.timeout)
            else:
                try:
                    entry = trainer_run.run(config, settings, model, servers[config.name], options.timeout)
                except Exception as error:  # the next configuration may still tell something
                    entry = {"error": f"{type(error).__name__}: {error} (log {log})", "traceback": traceback.format_exc()[-2000:]}
            entry["wall_s"] = time.perf_counter() - began  # start (plain) or job, load, steps, exit
            results["configs"][config.name] = entry
            if "error" in entry:
                results["errors"].append(f"{config.name}: {entry['error']}")
    finally:
        for server in servers.values():
            server.stop()
        results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
        if owned and not options.keep:
            shutil.rmtree(work, ignore_errors=True)
    return results
