"""(b) and (c): ART's experimental checkpoint pull and fork, unmodified, through the wandb SDK.

(b) backend._experimental_pull_model_checkpoint(model, step=N) after one RL step on
SmolLM2-135M-Instruct Q4_1 (the `smollm2` base model): a PEFT adapter directory that
peft.PeftModel.from_pretrained loads onto the Hugging Face model transformers builds from the
very GGUF file the service serves, and that changes its logits (loaded in one environment of the
matrix; the others check the files' LoRA tensors).

(c) backend._experimental_fork_checkpoint(dest, from_model=src.name) copies a step of one model
to another model on the same base, which then serves it: the same weights as the source's step
(the same system_fingerprint, as a step and as the latest) and the same first greedy log-prob.
On the tiny built-in model (copying an adapter does not depend on a real one).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, TRAINER_PYTHON, ArtTools, WandbEnv

SMOLLM2_GGUF = REPO_ROOT / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = "Write one short sentence about rivers."


async def pull(tools: ArtTools, into: Path) -> tuple[int, str]:
    backend = tools.backend()
    try:
        model = await tools.register(backend, "smollm2", "pull")
        groups = await tools.rollouts(model, ["Name a fruit.", "Say hello."], per_group=2, max_tokens=6)
        result = await backend.train(model, groups, learning_rate=1e-4)
        assert result.step == 1 and await model.get_step() == 1, result
        path = await backend._experimental_pull_model_checkpoint(model, step=1, local_path=str(into))
        await backend.delete(model)
        return result.step, path
    finally:
        await backend.close()


@pytest.mark.time_limit(240)
def test_pulled_checkpoint_loads_with_peft_on_the_gguf_model(
    art_tools: ArtTools, wandb_env: WandbEnv, wandb_served: None, tmp_path: Path
) -> None:
    assert SMOLLM2_GGUF.exists(), f"{SMOLLM2_GGUF} is missing (scripts/fetch-test-models.sh fetches it)"
    _, path = asyncio.run(pull(art_tools, tmp_path / "checkpoint"))
    directory = Path(path)
    files = sorted(p.name for p in directory.iterdir())
    assert "adapter_config.json" in files and "adapter_model.safetensors" in files, files
    config = json.loads((directory / "adapter_config.json").read_text())
    assert config.get("peft_type") == "LORA", config
    check_lora_tensors(directory / "adapter_model.safetensors", config)
    if os.environ.get("SRL_CLIENT_ENV", PEFT_LOAD_ENV) != PEFT_LOAD_ENV:
        # What PEFT loads is the service's files, the same whichever client pulled them; loading
        # them (half a minute: transformers dequantizes the GGUF) is shown once, in PEFT_LOAD_ENV.
        return

    # transformers + peft in a fresh interpreter, as a user's own script would, in the trainer's
    # environment (the ART 0.5.23 client's has no torch): `import art` (0.5.18) replaces
    # transformers.masking_utils._preprocess_mask_arguments with a wrapper whose signature
    # transformers 5.24 no longer calls (TypeError: missing 'layer_idx' on the first forward), so
    # no model can run in a process that imported art.
    check = subprocess.run(
        [str(TRAINER_PYTHON), "-c", PEFT_CHECK, str(SMOLLM2_GGUF), str(directory)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert check.returncode == 0, f"the PEFT check failed:\n{check.stdout}\n{check.stderr[-4000:]}"
    result = json.loads(check.stdout.strip().splitlines()[-1])
    difference = result["max_abs_logit_difference"]
    assert difference > 1e-5, f"the pulled adapter does not change the logits (max |Δ| {difference:g})"
    assert difference < 50, f"the pulled adapter changes the logits implausibly much (max |Δ| {difference:g})"


# The client environment of the matrix (scripts/test.sh) in which the pulled adapter is also loaded
# with PEFT; run by hand (no SRL_CLIENT_ENV), every environment loads it.
PEFT_LOAD_ENV = "art-0.5.18"


def check_lora_tensors(path: Path, config: dict[str, object]) -> None:
    """The safetensors file holds a LoRA A (r x in) and B (out x r) for each adapted module, of
    the adapter config's rank, and of every target module type it names (read from the file's
    header: the ART 0.5.23 environment has neither torch nor safetensors)."""
    with path.open("rb") as file:
        size = int.from_bytes(file.read(8), "little")
        header = json.loads(file.read(size))
    tensors = {name: entry for name, entry in header.items() if name != "__metadata__"}
    rank = config.get("r")
    pairs: dict[str, dict[str, list[int]]] = {}
    for name, entry in tensors.items():
        for side in ("lora_A", "lora_B"):
            if f".{side}." in name:
                pairs.setdefault(name.split(f".{side}.")[0], {})[side] = entry["shape"]
    assert pairs, f"no LoRA tensors in {sorted(tensors)[:8]}"
    for module, sides in pairs.items():
        a, b = sides.get("lora_A"), sides.get("lora_B")
        assert a and b and a[0] == rank and b[1] == rank, (module, sides, rank)
    targets = config.get("target_modules") or []
    for target in targets if isinstance(targets, list) else []:  # a string is a regex: not checked
        assert any(module.endswith(f".{target}") for module in pairs), (target, sorted(pairs)[:8])


PEFT_CHECK = """
import json, sys
from pathlib import Path
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf, adapter = Path(sys.argv[1]), sys.argv[2]
torch.manual_seed(0)
tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
base = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
model = PeftModel.from_pretrained(base, adapter).eval()
ids = tokenizer.apply_chat_template(
    [{"role": "user", "content": "Write one short sentence about rivers."}],
    add_generation_prompt=True, return_tensors="pt", return_dict=True,
)["input_ids"]
with torch.no_grad():
    adapted = model(input_ids=ids).logits
    with model.disable_adapter():
        bare = model(input_ids=ids).logits
assert adapted.shape == bare.shape, (adapted.shape, bare.shape)
assert bool(torch.isfinite(adapted).all()), "non-finite logits with the adapter"
print(json.dumps({"max_abs_logit_difference": (adapted - bare).abs().max().item(), "tokens": ids.shape[-1]}))
"""


async def fork(tools: ArtTools) -> None:
    backend = tools.backend()
    try:
        source = await tools.register(backend, "tiny-chat", "fork-src")
        groups = await tools.rollouts(source, ["Count to three.", "Name a colour."])
        result = await backend.train(source, groups, learning_rate=1e-2)
        step = result.step
        assert step == 1 and await source.get_step() == step, result
        _, source_logprobs = await tools.greedy(source, step, PROMPT)
        _, base_logprobs = await tools.greedy(source, 0, PROMPT)
        assert source_logprobs != base_logprobs, "the source's step does not differ from its base model"

        destination = await tools.register(backend, "tiny-chat", "fork-dst")
        assert await destination.get_step() == 0
        await backend._experimental_fork_checkpoint(destination, from_model=source.name)
        assert await destination.get_step() == step, "the forked step is not the destination's latest"
        # The same weights: the same fingerprint, and the same first greedy token's log-probability
        # (later tokens may part at a near tie: the source's cached prompt is reused, in another
        # batch shape).
        _, logprobs = await tools.greedy(destination, step, PROMPT)
        assert abs(logprobs[0] - source_logprobs[0]) < 1e-3, (logprobs, source_logprobs)
        source_weights = await tools.fingerprint(source, step)
        assert await tools.fingerprint(destination, step) == source_weights
        # And as its latest (what model.openai_client() users call without a step).
        assert await tools.fingerprint(destination, None) == source_weights
        assert await tools.fingerprint(destination, 0) != source_weights
        await backend.delete(destination)
        await backend.delete(source)
    finally:
        await backend.close()


@pytest.mark.time_limit(180)
def test_forked_checkpoint_is_served_by_the_destination(
    art_tools: ArtTools, wandb_env: WandbEnv, wandb_served: None
) -> None:
    assert "WANDB_API_KEY" not in os.environ
    asyncio.run(fork(art_tools))
