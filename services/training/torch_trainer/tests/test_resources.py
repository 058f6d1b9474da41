"""The job's micro-batch and checkpointing, derived from the device's free memory and the model's
measured activation cost."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from srl_trainer.activation_cost import _measure
from srl_trainer.activation_cost import ActivationCost
from srl_trainer.device_memory import DeviceMemory, device_memory
from srl_trainer.lora.config import peft_config
from srl_trainer.resources import choose

GiB = 2**30
COST_1B = ActivationCost(bytes_per_token=1.8 * 2**20, checkpointed_bytes_per_token=0.18 * 2**20, probe_tokens=256)


def gpu(free_gib: float) -> DeviceMemory:
    return DeviceMemory("cuda:0", int(free_gib * GiB), int(80 * GiB))


def test_a_large_gpu_gets_the_target_micro_batch_without_checkpointing() -> None:
    chosen = choose(0, 256, "auto", gpu(70), COST_1B, beside=0.5 * GiB, device_type="cuda")
    assert chosen.micro_batch_tokens == 16384 and chosen.gradient_checkpointing == "auto"
    assert not chosen.checkpoint(16384)  # the packs it plans fit the budget
    assert "16384 tokens per micro-batch" in chosen.reason and "derived from the device" in chosen.reason


def test_a_smaller_gpu_gets_what_fits_and_checkpoints_only_below_the_floor() -> None:
    fits = choose(0, 256, "auto", gpu(12), COST_1B, beside=0.5 * GiB, device_type="cuda")
    assert 4096 <= fits.micro_batch_tokens < 16384 and fits.micro_batch_tokens % 128 == 0
    assert fits.micro_batch_tokens * COST_1B.bytes_per_token <= fits.activation_budget_bytes
    assert fits.checkpoint(4 * fits.micro_batch_tokens)  # one overlong row past the budget: checkpointed
    tight = choose(0, 256, "auto", gpu(4), COST_1B, beside=0.5 * GiB, device_type="cuda")
    assert tight.gradient_checkpointing == "on"
    assert tight.micro_batch_tokens * COST_1B.checkpointed_bytes_per_token <= tight.activation_budget_bytes


def test_the_job_or_the_environment_fixes_the_settings() -> None:
    fixed = choose(2048, 64, "off", gpu(70), COST_1B, beside=0.0, device_type="cuda")
    assert (fixed.micro_batch_tokens, fixed.logits_chunk_tokens, fixed.gradient_checkpointing) == (2048, 64, "off")
    assert "fixed by the job" in fixed.reason
    on = choose(0, 256, "on", gpu(70), COST_1B, beside=0.0, device_type="cuda")
    assert on.gradient_checkpointing == "on" and on.checkpoint(1)


def test_the_cpu_keeps_half_of_the_free_memory_for_the_engines() -> None:
    host = DeviceMemory("cpu", 8 * GiB, 16 * GiB)
    chosen = choose(0, 256, "auto", host, COST_1B, beside=0.0, device_type="cpu")
    assert chosen.activation_budget_bytes == 4 * GiB
    assert chosen.micro_batch_tokens == 2048
    free = device_memory(torch.device("cpu"))
    assert 0 < free.free_bytes <= free.total_bytes


def test_the_activation_cost_is_measured_on_the_model_as_it_trains() -> None:
    from peft import get_peft_model

    def cost(layers: int) -> ActivationCost:
        torch.manual_seed(0)
        base = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2)).eval()
        base.requires_grad_(False)
        return _measure(get_peft_model(base, peft_config(8, 16.0, ["q_proj", "v_proj", "down_proj"])), autocast=False)

    two, four = cost(2), cost(4)
    assert two.bytes_per_token > 64 * 4 * 2  # at least a hidden-sized f32 vector per layer
    assert 1.6 < four.bytes_per_token / two.bytes_per_token < 2.4  # per layer
    assert four.checkpointed_bytes_per_token < four.bytes_per_token


def test_a_larger_model_gets_a_smaller_gpu_micro_batch_that_still_keeps_the_gpu_busy() -> None:
    # On an H200 an 8B model ran at 0.97x the speed with 4,096-token passes as with 13,952, at 0.41x
    # the memory; a 1B model needed 16,384 (4,096 ran at 0.68x).
    cost_8b = ActivationCost(bytes_per_token=7.6 * 2**20, checkpointed_bytes_per_token=0.49 * 2**20, probe_tokens=128)
    big = DeviceMemory("cuda:0", int(124 * GiB), int(140 * GiB))
    assert choose(0, 256, "auto", big, cost_8b, beside=1.0 * GiB, device_type="cuda", parameters=8_030_000_000).micro_batch_tokens == 4096
    assert choose(0, 256, "auto", big, COST_1B, beside=0.5 * GiB, device_type="cuda", parameters=1_236_000_000).micro_batch_tokens == 16384
    assert choose(0, 256, "auto", big, cost_8b, beside=1.0 * GiB, device_type="cuda", parameters=32_800_000_000).micro_batch_tokens == 2048
    # A 32B model's 2,048-token target fits without checkpointing in a 24.5 GiB budget (about 3,300 tokens would).
    small = choose(0, 256, "auto", gpu(30), cost_8b, beside=1.0 * GiB, device_type="cuda", parameters=32_800_000_000)
    assert small.micro_batch_tokens == 2048 and small.gradient_checkpointing == "auto"
    # The CPU's target does not depend on the model.
    assert choose(0, 256, "auto", DeviceMemory("cpu", 8 * GiB, 16 * GiB), COST_1B, beside=0.0, device_type="cpu", parameters=8_030_000_000).micro_batch_tokens == 2048
