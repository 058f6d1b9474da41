"""Builds the benchmark's base model on the device: a random-weight model of a named shape, saved
as a Hugging Face safetensors directory (bf16 on CUDA, f32 on CPU: the dtype the trainer and the
plain loop train in, so neither converts) and a GGUF of the same model (gguf_file.py). Runs in its
own process so that the building leaves no memory behind in the measured ones.

usage: python -m srl_trainer.bench.model_files --shape llama-1b --device cuda --out DIR --result FILE
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from .gguf_file import write_gguf
from .shapes import get_shape, hf_config, shape_fields


def device_facts(device: torch.device) -> dict[str, Any]:
    facts: dict[str, Any] = {"device": str(device), "torch": torch.__version__, "torch_cuda": torch.version.cuda}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        facts.update(gpu=props.name, gpu_memory_bytes=props.total_memory, gpu_count=torch.cuda.device_count())
    return facts


def build(shape_name: str, device: torch.device, out: Path, layers: int | None = None, gguf_weights: bool = False) -> dict[str, Any]:
    shape = get_shape(shape_name)
    fields = shape_fields(shape, layers)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    from transformers import AutoModelForCausalLM

    started = time.perf_counter()
    torch.manual_seed(0)
    with device:  # initialised on the device: a 32B model in seconds instead of minutes on the CPU
        model = AutoModelForCausalLM.from_config(hf_config(shape, layers), dtype=dtype)
    model.eval()
    built = time.perf_counter()
    model_dir = out / "model"
    model.save_pretrained(str(model_dir))
    saved = time.perf_counter()
    gguf_path = out / "model.gguf"
    gguf_bytes = write_gguf(gguf_path, shape.family, fields, model.state_dict(), f"srl-bench-{shape.name}", gguf_weights)
    done = time.perf_counter()
    return {
        "shape": shape.name,
        "about": shape.about,
        "family": shape.family,
        "layers": fields["num_hidden_layers"],
        "vocab_size": fields["vocab_size"],
        "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": str(dtype).replace("torch.", ""),
        "model_dir": str(model_dir),
        "gguf": str(gguf_path),
        "gguf_bytes": gguf_bytes,
        "gguf_weights": "real" if gguf_weights else "header only (sparse zeros)",
        "safetensors_bytes": sum(f.stat().st_size for f in model_dir.glob("*.safetensors")),
        "build_s": built - started,
        "save_safetensors_s": saved - built,
        "write_gguf_s": done - saved,
        **device_facts(device),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="srl_trainer.bench.model_files")
    parser.add_argument("--shape", required=True)
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=0)
    parser.add_argument("--gguf-weights", action="store_true", help="write the real weights into the GGUF (else its header only)")
    parser.add_argument("--result", required=True)
    args = parser.parse_args()
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # auto is resolved here, not in the parent: the parent never imports torch nor touches CUDA.
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device)
    info = build(args.shape, device, out, args.layers or None, args.gguf_weights)
    Path(args.result).write_text(json.dumps(info, indent=2) + "\n")


if __name__ == "__main__":
    main()
