"""`python -m srl_trainer.bench --shape llama-1b [--out DIR]`: the trainer against the plain PyTorch +
PEFT loop on this machine's device (package docstring; README "GPU benchmark"). Prints the summary,
writes summary.md and results.json under --out; exit 1 when a configuration failed or a step-1 loss
differs from the plain loop's beyond the tolerance."""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
from pathlib import Path

from .configs import CONFIGS
from .report import loss_checks, markdown, package_versions
from .run import Options, run_bench
from .shapes import SHAPES


def parse(argv: list[str] | None = None) -> Options:
    d = Options()
    parser = argparse.ArgumentParser(prog="python -m srl_trainer.bench", description=__doc__)
    parser.add_argument("--shape", default=d.shape, choices=list(SHAPES))
    parser.add_argument("--rows", type=int, default=d.rows)
    parser.add_argument("--seq", type=int, default=d.seq)
    parser.add_argument("--steps", type=int, default=d.steps, help="optimizer steps; the first is reported apart (warm-up)")
    parser.add_argument("--device", default=d.device, help="auto | cuda | cuda:N | cpu")
    parser.add_argument("--configs", default=d.configs, help=f"comma-separated subset of {','.join(CONFIGS)} (default: all)")
    parser.add_argument("--out", default=d.out, help="directory for summary.md, results.json and the children's logs")
    parser.add_argument("--work", default=d.work, help="where the model files go (default: a temp dir, removed after)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (model files, settings)")
    parser.add_argument("--layers", type=int, default=d.layers, help="fewer layers than the shape's (0: the shape's)")
    parser.add_argument("--threads", type=int, default=d.threads, help="CPU threads of each child (0: all this process may use)")
    parser.add_argument("--gguf-weights", action="store_true", help="write the real weights into the GGUF (default: its header only)")
    parser.add_argument("--timeout", type=float, default=d.timeout, help="seconds per child process")
    parser.add_argument("--loss-tolerance", type=float, default=d.loss_tolerance, help="relative step-1 loss tolerance (0: 1e-3 CPU, 5e-3 CUDA)")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.seq < 2 or args.steps < 1:
        parser.error("--rows >= 1, --seq >= 2 and --steps >= 1")
    return Options(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Options)})


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    # `timeout` or a job scheduler's SIGTERM: unwind, so that the trainer processes are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = run_bench(options)
    cuda = str(results.get("model", {}).get("device", "")).startswith("cuda")
    tolerance = options.loss_tolerance or (5e-3 if cuda else 1e-3)
    results["loss_tolerance"] = tolerance
    results["checks"] = loss_checks(results, tolerance)
    versions = package_versions()
    results["versions"] = versions
    text = markdown(results, versions, tolerance)
    if options.out:
        out = Path(options.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.md").write_text(text)
        (out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(text, flush=True)
    failed = bool(results["errors"]) or any(not c["ok"] for c in results["checks"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
