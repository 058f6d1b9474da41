"""Adapters in both formats: PEFT files load into PEFT itself and compute what the trainer's LoRA
computes; the llama.cpp GGUF round-trips; the Q/K row permutation is transformers' own (the loader
that dequantizes the GGUF the engine serves), so an exported B matches the engine's layout."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from peft import PeftModel
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

from srl_trainer.architectures import SUPPORTED, permute_rows, unpermute_rows
from srl_trainer.base_models import GgufFacts, LoadedModel
from srl_trainer.errors import InputError
from srl_trainer import proto
from srl_trainer.job_input import ROLE_PREVIOUS, AdapterInput, JobInput
from srl_trainer.lora import attach, gguf_files, peft_files
from srl_trainer.lora.adapter import Adapter


def tiny(kind: str) -> LoadedModel:
    torch.manual_seed(0)
    common = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = LlamaForCausalLM(LlamaConfig(**common)) if kind == "llama" else Qwen2ForCausalLM(Qwen2Config(**common))
    model.requires_grad_(False)
    model.eval()
    facts = GgufFacts(path="", architecture=kind, tensor_types=("F32",), quantized=False, context_length=64, n_head=4, n_head_kv=2, n_blocks=2)
    return LoadedModel(key=(), model=model, facts=facts, arch=SUPPORTED[kind], load_seconds=0.0)


def trained_adapter(loaded: LoadedModel) -> tuple[PeftModel, Adapter]:
    peft_model = attach.attach(loaded, 4, 8.0, list(loaded.arch.default_targets), seed=1)
    with torch.no_grad():
        for layer in attach.lora_layers(peft_model).values():
            layer.lora_B["default"].weight.normal_()  # a fresh B is zero: make the adapter do something
    return peft_model, attach.read_adapter(peft_model)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_peft_files_load_into_peft_and_compute_the_same(kind: str) -> None:
    loaded = tiny(kind)
    model, adapter = trained_adapter(loaded)
    ids = torch.randint(0, 64, (1, 12))
    with torch.no_grad():
        ours = model(ids).logits
    files = peft_files.write(adapter, "tiny")
    config = json.loads(files[peft_files.CONFIG])
    assert config["r"] == 4 and config["lora_alpha"] == 8.0 and set(config["target_modules"]) == set(loaded.arch.default_targets)
    attach.detach(model)
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            Path(tmp, name).write_bytes(data)
        loaded_by_peft = PeftModel.from_pretrained(loaded.model, tmp)
        with torch.no_grad():
            theirs = loaded_by_peft(ids).logits
        loaded_by_peft.unload()
    assert torch.allclose(ours, theirs, atol=1e-5)
    # And the plain base is back: detach/unload left no LoRA behind.
    with torch.no_grad():
        assert not torch.allclose(loaded.model(ids).logits, ours, atol=1e-3)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_gguf_round_trip_and_layout(kind: str) -> None:
    loaded = tiny(kind)
    model, adapter = trained_adapter(loaded)
    modules = sorted(adapter.pairs)
    data = gguf_files.write(adapter, loaded, "t")
    back = gguf_files.read(data, loaded, modules)
    attach.detach(model)
    assert back.rank == 4 and back.alpha == 8.0 and set(back.pairs) == set(modules)
    for name in modules:
        np.testing.assert_array_equal(back.pairs[name][0], adapter.pairs[name][0])
        np.testing.assert_array_equal(back.pairs[name][1], adapter.pairs[name][1])
    # In the file, q/k's B rows are in llama.cpp's order for llama GGUFs only.
    import gguf

    with tempfile.NamedTemporaryFile(suffix=".gguf") as tmp:
        tmp.write(data)
        tmp.flush()
        stored = {t.name: np.array(t.data) for t in gguf.GGUFReader(tmp.name).tensors}
    b_hf = adapter.pairs["model.layers.1.self_attn.k_proj"][1]
    b_file = stored["blk.1.attn_k.weight.lora_b"]
    expected = permute_rows(b_hf, 4, 2) if kind == "llama" else b_hf
    np.testing.assert_array_equal(b_file, expected)


def test_permutation_is_the_inverse_of_transformers_gguf_loader() -> None:
    processor = LlamaTensorProcessor(config={"num_attention_heads": 8, "num_key_value_heads": 2})
    for heads, kv, rows in ((8, 8, 64), (8, 2, 16)):
        w = np.random.default_rng(0).standard_normal((rows, 5))
        gguf_layout = permute_rows(w, heads, kv)
        np.testing.assert_array_equal(processor._reverse_permute_weights(gguf_layout, heads, kv), w)
        np.testing.assert_array_equal(unpermute_rows(gguf_layout, heads, kv), w)


def test_bad_adapters_are_input_errors() -> None:
    loaded = tiny("llama")
    with pytest.raises(InputError):
        peft_files.read({peft_files.CONFIG: b"{}"})
    with pytest.raises(InputError):
        peft_files.read({peft_files.CONFIG: b"not json", peft_files.WEIGHTS: b"x"})
    with pytest.raises(InputError):
        gguf_files.read(b"GGUF nonsense", loaded, [])
    model, adapter = trained_adapter(loaded)
    try:
        adapter.pairs.pop("model.layers.0.self_attn.q_proj")
        with pytest.raises(InputError):
            attach.load_into(model, adapter)
    finally:
        attach.detach(model)


def test_a_jobs_lora_takes_the_previous_adapters_shape_else_the_contracts_defaults() -> None:
    pb, _ = proto.load()
    loaded = tiny("llama")
    fresh = attach.attach_for_job(loaded, JobInput(spec=pb.JobSpec()))
    try:
        adapter = attach.read_adapter(fresh)
        assert (adapter.rank, adapter.alpha, adapter.targets) == (8, 16.0, set(loaded.arch.default_targets))  # spec §5.1
    finally:
        attach.detach(fresh)
    model, previous = trained_adapter(loaded)
    attach.detach(model)
    given = {ROLE_PREVIOUS: AdapterInput(format="peft", files=peft_files.write(previous, "tiny"))}
    continued = attach.attach_for_job(loaded, JobInput(spec=pb.JobSpec(lora=pb.LoraConfig(alpha=8.0)), adapters=given))
    try:
        adapter = attach.read_adapter(continued)
        assert (adapter.rank, adapter.alpha) == (4, 8.0)
        for name, (a, b) in previous.pairs.items():
            np.testing.assert_array_equal(adapter.pairs[name][1], b)
    finally:
        attach.detach(continued)
    with pytest.raises(InputError, match="cannot change them"):
        attach.attach_for_job(loaded, JobInput(spec=pb.JobSpec(lora=pb.LoraConfig(rank=8)), adapters=given))
