"""The plain PyTorch + PEFT loop the trainer is measured against: reference/plain_peft_loop.py as one
writes it from the libraries' documentation (LoRA on every projection, full logits and the model's
own loss, one padded [rows, seq] batch, AdamW, clipping at 1.0), with what a GPU needs: bf16
weights on CUDA (f32 on the CPU, as the reference), the batch on the device, a synchronize before
each clock read (else a step would time only the kernel launches), and the allocator's peak. For the
comparison it takes the benchmark's settings: the same safetensors directory as the trainer's
`train_weights`, the same rows on every step, the LoRA seeded right before get_peft_model (as the
trainer seeds its own), the same learning rate and AdamW betas.

When the whole batch does not fit in GPU memory, it retries the step as a plain user would: gradient
accumulation over halves (quarters, ...) of the batch, the token mean kept; the peak is then that
of the setting that ran. Runs in its own process (its peak memory is its own).

usage: python -m srl_trainer.bench.plain_loop --model DIR --device cuda --settings FILE --result FILE
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import torch

from .settings import Settings, make_rows
from .timing import summarize_steps

# CPU test of the accumulation fallback: an "out of memory" above this many rows per pass.
FAKE_OOM_ROWS = int(os.environ.get("SRL_BENCH_FAKE_OOM_ROWS", "0"))


def run(model_dir: str, device: torch.device, settings: Settings, threads: int) -> dict[str, Any]:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(threads)
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    sync: Callable[[], None] = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    result: dict[str, Any] = {"device": str(device), "dtype": str(dtype).replace("torch.", ""), "threads": threads}

    started = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype).to(device)
    torch.manual_seed(settings.lora_seed)
    lora = LoraConfig(r=settings.rank, lora_alpha=settings.alpha, target_modules=list(settings.targets), lora_dropout=0.0, bias="none")
    model = get_peft_model(model, lora)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.lr, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0)
    sync()
    result["load_seconds"] = time.perf_counter() - started
    result["trainable_params"] = sum(p.numel() for p in params)
    result["lora_dtype"] = str(params[0].dtype).replace("torch.", "")

    input_ids = torch.from_numpy(make_rows(settings)).to(device)
    labels = input_ids.clone()
    labels[:, : settings.seq // 2] = -100  # the prompt half is not trained, as the trainer's flags say
    all_targets = (labels[:, 1:] != -100).sum()
    micro = settings.rows  # rows per forward/backward; halved on out-of-memory
    ooms: list[str] = []

    def step() -> float:
        if FAKE_OOM_ROWS and micro > FAKE_OOM_ROWS:
            raise torch.OutOfMemoryError(f"fake out of memory (SRL_BENCH_FAKE_OOM_ROWS={FAKE_OOM_ROWS})")
        total = 0.0
        for start in range(0, settings.rows, micro):
            ids, lab = input_ids[start : start + micro], labels[start : start + micro]
            loss = model(input_ids=ids, labels=lab).loss
            if micro < settings.rows:  # accumulation keeps the whole batch's token mean
                loss = loss * ((lab[:, 1:] != -100).sum() / all_targets)
            loss.backward()
            total += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return total

    seconds: list[float] = []
    losses: list[float] = []
    while len(seconds) < settings.steps:
        sync()
        t = time.perf_counter()
        oom = ""
        try:
            loss = step()
        except torch.OutOfMemoryError as error:
            oom = f"step {len(seconds) + 1} with {micro} rows per pass: {str(error).splitlines()[0][:200]}"
        if oom:  # handled outside the except block, so that the failed step's tensors are freed
            optimizer.zero_grad(set_to_none=True)
            ooms.append(oom)
            if micro == 1:
                break
            micro //= 2
            print(f"plain: out of memory ({oom}); accumulating over {micro} rows per pass", file=sys.stderr, flush=True)
            gc.collect()
            if cuda:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(device)  # the peak of the setting that runs
            continue
        sync()
        seconds.append(time.perf_counter() - t)
        losses.append(loss)
        print(f"  plain step {len(seconds)}: loss {loss:.5f} {seconds[-1]:.3f} s", file=sys.stderr, flush=True)
    result.update(summarize_steps(seconds, settings.step_tokens))
    result.update(losses=losses, rows_per_pass=micro, out_of_memory=ooms, completed=len(seconds) == settings.steps)
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    if cuda:
        result["peak_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
        result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved(device)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="srl_trainer.bench.plain_loop")
    parser.add_argument("--model", required=True, help="Hugging Face safetensors directory")
    parser.add_argument("--device", required=True)
    parser.add_argument("--settings", required=True)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--result", required=True)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    result = run(args.model, torch.device(args.device), Settings.read(Path(args.settings)), args.threads)
    Path(args.result).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
