"""The reference of `npm run bench:train`: a plain PyTorch + PEFT training loop as one would write
it from the libraries' documentation — the Hugging Face model loaded from the same GGUF, LoRA on
every projection, full logits and the model's own loss, rows padded into one [rows, seq] batch,
AdamW. Prints one JSON line: load and per-step seconds, peak RSS.

usage: python plain_peft_loop.py --model FILE.gguf --rows 8 --seq 128 --steps 4 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
import warnings
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    started = time.perf_counter()
    path = Path(args.model)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=targets, lora_dropout=0.0, bias="none"))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0)
    load_seconds = time.perf_counter() - started

    vocab = model.config.vocab_size
    steps: list[float] = []
    losses: list[float] = []
    for _ in range(args.steps):
        input_ids = torch.randint(0, vocab, (args.rows, args.seq))
        labels = input_ids.clone()
        labels[:, : args.seq // 2] = -100  # the prompt half is not trained, as in the service's bench rows
        t = time.perf_counter()
        loss = model(input_ids=input_ids, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        steps.append(time.perf_counter() - t)
        losses.append(float(loss))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"load_seconds": load_seconds, "step_seconds": steps, "losses": losses, "peak_rss_bytes": peak, "threads": args.threads}))


if __name__ == "__main__":
    main()
