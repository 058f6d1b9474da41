"""The GPU benchmark (srl_trainer.bench) end to end on the CPU with the tiny shape: the model built,
the plain PEFT loop and the trainer's three configurations each in a fresh process, the table with
its ratios, and step 1 (the base model: LoRA B is zero) equal for the trainer and the plain loop.
Plus the GGUFs the benchmark writes for each family: the header-only file has the real one's header,
and the real one loads in transformers to the safetensors model's logits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent  # services/training/torch_trainer


def test_tiny_benchmark_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    command = [sys.executable, "-m", "srl_trainer.bench", "--shape", "tiny", "--device", "cpu", "--rows", "4", "--seq", "64", "--steps", "3", "--out", str(out), "--work", str(tmp_path / "work")]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = (out / "summary.md").read_text()
    assert summary == done.stdout.rstrip("\n") + "\n"
    results = json.loads((out / "results.json").read_text())
    assert results["model"]["device"] == "cpu" and not results["errors"]

    header = "| configuration | tokens/s | first step s | peak memory | peak reserved | loss 1 | loss last | tokens/s vs plain | peak vs plain |"
    lines = summary.splitlines()
    table = lines[lines.index(header) + 2 : lines.index(header) + 6]
    assert len(table) == 4 and table[0].startswith("| plain PyTorch + PEFT (float32, 4 rows per pass)")
    for row in table:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 9, row
        assert float(cells[1]) > 0 and float(cells[2]) > 0, row  # tokens/s, first step
        assert re.fullmatch(r"\d+ MiB|\d+\.\d\d GiB", cells[3]), row  # peak RSS on the CPU
        assert re.fullmatch(r"\d+\.\d\dx", cells[7]) and re.fullmatch(r"\d+\.\d\dx", cells[8]), row  # the ratios
    assert table[0].endswith("| 1.00x | 1.00x |")

    configs = results["configs"]
    assert list(configs) == ["plain", "defaults", "ckpt_on", "one_pack"]
    plain = configs["plain"]["losses"]
    assert len(plain) == 3 and configs["plain"]["rows_per_pass"] == 4
    for name in ("defaults", "ckpt_on", "one_pack"):
        entry = configs[name]
        assert entry["completed"] and entry["trained"] and entry["adapter"]["finite"] and entry["adapter"]["max_abs_b"] > 0
        assert abs(entry["losses"][0] - plain[0]) <= 1e-3 * abs(plain[0]), (name, entry["losses"], plain)
        assert entry["peak_rss_bytes"] > 0
    assert configs["defaults"]["adapter"]["gguf_tensors"] == 2 * 7 * 2  # A and B of 7 projections in 2 layers
    checks = results["checks"]
    assert [c["config"] for c in checks] == ["defaults", "ckpt_on", "one_pack"] and all(c["ok"] for c in checks)
    assert "relative diff" in summary and "MISMATCH" not in summary


@pytest.mark.parametrize("shape", ["tiny", "tiny-qwen2", "tiny-qwen3"])
def test_gguf_files_of_each_family(tmp_path: Path, shape: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from srl_trainer.base_models import inspect_gguf, why_not_trainable
    from srl_trainer.bench.model_files import build
    from srl_trainer.gguf_meta import read_meta

    real = build(shape, torch.device("cpu"), tmp_path / "real", gguf_weights=True)
    header = build(shape, torch.device("cpu"), tmp_path / "header", gguf_weights=False)
    a, b = read_meta(real["gguf"]), read_meta(header["gguf"])
    assert a.tensors == b.tensors and a.fields == b.fields  # the same header, data apart
    assert os.path.getsize(header["gguf"]) == os.path.getsize(real["gguf"])
    facts = inspect_gguf(header["gguf"])
    assert why_not_trainable(facts) is None and facts.architecture == real["family"] and facts.n_blocks == 2
    from_dir = AutoModelForCausalLM.from_pretrained(real["model_dir"], dtype=torch.float32)
    from_gguf = AutoModelForCausalLM.from_pretrained(str(tmp_path / "real"), gguf_file="model.gguf", dtype=torch.float32)
    ids = torch.randint(0, 500, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        diff = (from_dir(ids).logits - from_gguf(ids).logits).abs().max().item()
    assert diff < 5e-3  # F16 matrices in the GGUF
