"""tinker-cookbook's minimal recipes, sl_loop and rl_loop, run unmodified against the service as a
user runs them (`python -m tinker_cookbook.recipes.sl_loop key=value ...`: a process of their own,
chz arguments, TINKER_BASE_URL / TINKER_API_KEY / HF_ENDPOINT in the environment), through the
launcher cookbook_recipe.py, which answers only two look-ups locally: the Hub dataset the recipe
hard-codes (a local JSON Lines file of the same columns, read with datasets' "json" loader; the
datasets library is offline) and the renderer the cookbook's model registry would recommend (the
registry knows `org/model` names only; tiny-chat's template is ChatML, which `qwen3_instruct`
renders token for token, checked below).

rl_loop's reward is the GSM8K one (\\boxed{N} equal to the answer after ####). A random-weight
model never writes \\boxed{}, every group would score 0 and the recipe would skip every training
step, so the RL tests start from an SFT checkpoint made with sl_loop (answers \\boxed{3} and
\\boxed{4}, half each, so the rewards of a group differ), loaded the recipe's own way: a
checkpoints.jsonl in its log_path (what it resumes from) naming that state at batch 0. Its default
loss, stable_reinforce, needs sampler records this service does not keep: the recipe is run with
loss_fn=importance_sampling, cispo and gspo, and the default is shown to be refused at once.

Only in the environment that has the cookbook (tinker-0.38.0: tinker-cookbook 0.6.1 requires
tinker>=0.38; see the lock's header for tml-renderers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "tinker_cookbook",
    reason="tinker-cookbook is installed only in the tinker-0.38.0 environment (0.6.1 requires tinker>=0.38)",
)

import tinker  # noqa: E402
from tinker_cookbook import renderers  # noqa: E402
from tinker_cookbook.tokenizer_utils import get_tokenizer  # noqa: E402

from conftest import TinkerClients, tinker_key  # noqa: E402
from srl_pytest_server import Service  # noqa: E402
from tinker_steps import ready  # noqa: E402

BASE = "tiny-chat"
RENDERER = "qwen3_instruct"  # ChatML, as the tiny models' chat template
LAUNCHER = Path(__file__).with_name("cookbook_recipe.py")
# What rl_loop appends to every question; the SFT data asks the same way.
QUESTION_SUFFIX = " Provide a numerical answer without units, written inside \\boxed{}."
SUMS = [(1, 2), (2, 1), (0, 3), (3, 0), (1, 3), (2, 2), (3, 1), (0, 4)]
RECIPE_TIMEOUT_S = 150


def no_robots_rows(count: int) -> list[dict[str, Any]]:
    """Rows with HuggingFaceH4/no_robots' columns: questions of SUMS, answered \\boxed{3} in one
    pass over them and \\boxed{4} in the next (what the model is to learn is the answer's form)."""
    rows = []
    for index in range(count):
        x, y = SUMS[index % len(SUMS)]
        question = f"What is {x} + {y}?{QUESTION_SUFFIX}"
        answer = "\\boxed{3}" if (index // len(SUMS)) % 2 == 0 else "\\boxed{4}"
        rows.append(
            {
                "prompt": question,
                "prompt_id": f"sum-{index}",
                "messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}],
                "category": "Open QA",
            }
        )
    return rows


def gsm8k_rows() -> list[dict[str, str]]:
    """Rows with openai/gsm8k's columns (question; answer ending `#### N`)."""
    return [
        {"question": f"What is {x} + {y}?", "answer": f"{x} + {y} = <<{x}+{y}={x + y}>>{x + y}\n#### {x + y}"}
        for x, y in [(1, 2), (2, 2), (2, 1), (3, 1)]
    ]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@dataclass
class RecipeRun:
    returncode: int
    output: str
    log_path: Path
    report: dict[str, Any]

    def metrics(self) -> list[dict[str, Any]]:
        path = self.log_path / "metrics.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def checkpoints(self) -> list[dict[str, Any]]:
        path = self.log_path / "checkpoints.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def why(self) -> str:
        return f"exit {self.returncode}; its output's end:\n" + "\n".join(self.output.splitlines()[-40:])


def run_recipe(
    service: Service,
    hf_home: Path,
    workdir: Path,
    recipe: str,
    args: dict[str, Any],
    local_datasets: dict[str, str],
) -> RecipeRun:
    """`python cookbook_recipe.py tinker_cookbook.recipes.RECIPE key=value ...` in a process of its
    own, with the environment a user sets and nothing else of the SDK's or the Hub's."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("TINKER_", "HF_", "SRL_RECIPE_"))
        and name not in ("TRANSFORMERS_OFFLINE", "HUGGING_FACE_HUB_TOKEN")
    }
    report_path = workdir / f"{recipe}-report.json"
    env.update(
        TINKER_BASE_URL=service.url,
        TINKER_API_KEY=tinker_key(service, "alice"),
        HF_ENDPOINT=service.url + "/hf",
        HF_HOME=str(hf_home),
        HF_DATASETS_OFFLINE="1",  # the data are local files; the Hub is never asked
        TOKENIZERS_PARALLELISM="false",
        SRL_RECIPE_DATASETS=json.dumps(local_datasets),
        SRL_RECIPE_RENDERERS=json.dumps({BASE: RENDERER}),
        SRL_RECIPE_REPORT=str(report_path),
    )
    log_path = Path(args["log_path"])
    command = [sys.executable, str(LAUNCHER), f"tinker_cookbook.recipes.{recipe}"]
    command += [f"{key}={value}" for key, value in args.items()]
    try:
        done = subprocess.run(
            command, env=env, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=RECIPE_TIMEOUT_S
        )
        returncode, output = done.returncode, done.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as expired:
        returncode, output = -1, (expired.stdout or b"").decode(errors="replace") + f"\n(killed after {RECIPE_TIMEOUT_S} s)"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return RecipeRun(returncode, output, log_path, report)


def assert_only_the_lookups_were_answered(run: RecipeRun, dataset: str) -> None:
    assert [d["name"] for d in run.report["datasets"]] == [dataset], run.report
    assert run.report["renderers"] == [{"model": BASE, "renderer": RENDERER}], run.report
    # tml-renderers (0.6.1 requires >=0.4.1, PyPI has 0.2.1) is never imported by these recipes.
    assert run.report["tml_renderers_modules"] == [], run.report


def sl_args(log_path: Path, **overrides: Any) -> dict[str, Any]:
    args: dict[str, Any] = dict(
        model_name=BASE, log_path=log_path, batch_size=8, learning_rate=1e-2, lora_rank=8, max_length=256, save_every=0
    )
    args.update(overrides)
    return args


@pytest.fixture(scope="module")
def warm_start(tinker_served: Service, hf_home: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """An SFT state of tiny-chat that answers \\boxed{3} or \\boxed{4} (sl_loop, 8 steps): the
    state_path of its final checkpoint."""
    workdir = tmp_path_factory.mktemp("warm-start")
    data = write_jsonl(workdir / "no_robots.jsonl", no_robots_rows(64))
    run = run_recipe(tinker_served, hf_home, workdir, "sl_loop", sl_args(workdir / "sl"), {"HuggingFaceH4/no_robots": data})
    assert run.returncode == 0, run.why()
    return run.checkpoints()[-1]["state_path"]


@pytest.mark.time_limit(180)
def test_sl_loop_recipe_trains_and_its_checkpoints_serve(
    tinker_clients: TinkerClients, hf_home: Path, tmp_path: Path
) -> None:
    # The renderer given for tiny-chat renders what its own chat template does, token for token.
    tokenizer = get_tokenizer(BASE)
    renderer = renderers.get_renderer(RENDERER, tokenizer)
    convo: list[renderers.Message] = [
        {"role": "user", "content": "What is 1 + 2?"},
        {"role": "assistant", "content": "\\boxed{3}"},
        {"role": "user", "content": "And 2 + 2?"},
    ]
    template = tokenizer.apply_chat_template(convo, add_generation_prompt=True, tokenize=True)
    template_ids = list(template["input_ids"] if hasattr(template, "keys") else template)
    assert renderer.build_generation_prompt(convo).to_ints() == template_ids

    data = write_jsonl(tmp_path / "no_robots.jsonl", no_robots_rows(64))
    started = time.monotonic()
    run = run_recipe(
        tinker_clients.service,
        hf_home,
        tmp_path,
        "sl_loop",
        sl_args(tmp_path / "sl", save_every=4),
        {"HuggingFaceH4/no_robots": data},
    )
    print(f"sl_loop: {time.monotonic() - started:.1f} s")
    assert run.returncode == 0, run.why()
    assert_only_the_lookups_were_answered(run, "HuggingFaceH4/no_robots")

    # One epoch of the local file: 64 rows / batch_size 8 = 8 steps, the NLL falling as it learns.
    metrics = run.metrics()
    assert [m["step"] for m in metrics] == list(range(8)), metrics
    assert all(m["num_sequences"] == 8 for m in metrics), metrics
    nll = [m["train_mean_nll"] for m in metrics]
    print("sl_loop train_mean_nll: " + " -> ".join(f"{x:.2f}" for x in nll))
    assert nll[0] > 3 and nll[-1] < 1, nll

    # save_every=4: a resumable state at batch 4; at the end, state and sampler weights.
    checkpoints = run.checkpoints()
    assert [c["name"] for c in checkpoints] == ["000004", "final"], checkpoints
    assert checkpoints[0]["batch"] == 4 and "state_path" in checkpoints[0]
    final = checkpoints[-1]
    assert final["state_path"].startswith("tinker://") and final["sampler_path"].startswith("tinker://"), final

    # The final sampler weights answer the way they were taught.
    sampler = ready(tinker_clients.service_client().create_sampling_client(model_path=final["sampler_path"]))
    prompt = renderer.build_generation_prompt([{"role": "user", "content": f"What is 2 + 1?{QUESTION_SUFFIX}"}])
    result = sampler.sample(
        prompt=prompt,
        num_samples=1,
        sampling_params=tinker.types.SamplingParams(max_tokens=16, temperature=0.0, stop=renderer.get_stop_sequences()),
    ).result()
    message, _ = renderer.parse_response(result.sequences[0].tokens)
    answer = renderers.get_text_content(message)
    assert answer in ("\\boxed{3}", "\\boxed{4}"), answer


@pytest.mark.time_limit(150)
@pytest.mark.parametrize("loss_fn", ["importance_sampling", "cispo", "gspo"])
def test_rl_loop_recipe_trains_from_an_sft_checkpoint(
    tinker_served: Service, hf_home: Path, tmp_path: Path, warm_start: str, loss_fn: str
) -> None:
    data = write_jsonl(tmp_path / "gsm8k.jsonl", gsm8k_rows())
    log_path = tmp_path / "rl"
    log_path.mkdir()
    # Where the recipe resumes from: the SFT state, at batch 0 of this run.
    (log_path / "checkpoints.jsonl").write_text(json.dumps({"name": "sft", "batch": 0, "state_path": warm_start}) + "\n")
    args = dict(
        model_name=BASE,
        log_path=log_path,
        loss_fn=loss_fn,
        batch_size=2,
        group_size=8,
        max_steps=2,
        max_tokens=24,
        lora_rank=8,
        save_every=0,
    )
    started = time.monotonic()
    run = run_recipe(tinker_served, hf_home, tmp_path, "rl_loop", args, {"openai/gsm8k": data})
    print(f"rl_loop ({loss_fn}): {time.monotonic() - started:.1f} s")
    assert run.returncode == 0, run.why()
    assert_only_the_lookups_were_answered(run, "openai/gsm8k")
    assert "Resuming from batch 0" in run.output, run.why()

    metrics = run.metrics()
    print(f"rl_loop ({loss_fn}) reward/total per step: {[m['reward/total'] for m in metrics]}")
    assert [m["step"] for m in metrics] == [0, 1], metrics
    assert all(0.0 <= m["reward/total"] <= 1.0 for m in metrics), metrics
    # The SFT state answers 3 or 4, so groups score both 0 and 1 and the recipe trains: its
    # optim_step's metrics (grad_norm) are logged for a step that did.
    assert any(0.0 < m["reward/total"] < 1.0 for m in metrics), metrics
    assert any("grad_norm" in m for m in metrics), metrics

    final = run.checkpoints()[-1]
    assert final["name"] == "final" and final["sampler_path"].startswith("tinker://"), run.checkpoints()


@pytest.mark.time_limit(120)
def test_rl_loop_recipe_default_loss_is_refused_at_once(
    tinker_served: Service, hf_home: Path, tmp_path: Path
) -> None:
    """rl_loop's default loss_fn, stable_reinforce, asks the sampler to record stability info
    (save_weights_and_get_sampling_client(record_stability_info=True)); the service does not
    offer it and says so (HTTP 400), and the recipe stops instead of retrying."""
    data = write_jsonl(tmp_path / "gsm8k.jsonl", gsm8k_rows())
    args = dict(model_name=BASE, log_path=tmp_path / "rl", batch_size=2, group_size=2, max_steps=1, max_tokens=8, lora_rank=8, save_every=0)
    started = time.monotonic()
    run = run_recipe(tinker_served, hf_home, tmp_path, "rl_loop", args, {"openai/gsm8k": data})
    assert run.returncode != 0, run.why()
    assert "record_stability_info" in run.output and "not offered by this server" in run.output, run.why()
    assert time.monotonic() - started < 90
