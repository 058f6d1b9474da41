"""lm-evaluation-harness 0.4.13 against the service, offline, on SmolLM2 (`smollm2`).

- `local-completions` on a local multiple-choice task (tasks/srl_mc.*: 24 items, 3 choices): its
  tokenizer is the service's own (lm-eval's `auto` backend finds /tokenizer_info and /tokenize),
  and its acc / acc_norm EQUAL the ones computed here directly from the service's
  log-probabilities of the same items (each choice's tokens scored with vLLM's prompt_logprobs,
  acc and acc_norm as lm-eval defines them: the argmax of the summed log-likelihoods, and of the
  same divided by the choice's length in characters).
- `local-chat-completions` on a local generation task (tasks/srl_gen.*: generate_until).
"""

from __future__ import annotations

import json
import math
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import Service

TASKS = Path(__file__).resolve().parent / "tasks"
MODEL = "smollm2"


def _post(service: Service, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        service.url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {service.keys['alice']}"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _task_dir(tmp_path: Path) -> Path:
    """The task YAMLs with their data files' absolute paths (datasets reads local JSON offline)."""
    out = tmp_path / "tasks"
    out.mkdir()
    for yaml in TASKS.glob("*.yaml"):
        (out / yaml.name).write_text(yaml.read_text().replace("SRL_TASK_DIR", str(TASKS)))
    return out


def _items() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (TASKS / "srl_mc.json").read_text().splitlines() if line.strip()]


def _tokens(service: Service, text: str) -> list[int]:
    return _post(service, "/tokenize", {"model": MODEL, "prompt": text, "add_special_tokens": False})["tokens"]


def _continuation_logprob(service: Service, context: str, continuation: str) -> float:
    """log P(continuation | context) from the service's prompt log-probabilities of the whole."""
    whole = _tokens(service, context + continuation)
    context_len = len(_tokens(service, context))
    out = _post(service, "/v1/completions", {"model": MODEL, "prompt": whole, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 0})
    prompt_logprobs = out["choices"][0]["prompt_logprobs"]
    assert len(prompt_logprobs) == len(whole)
    return sum(prompt_logprobs[i][str(whole[i])]["logprob"] for i in range(context_len, len(whole)))


def _argmax(values: list[float]) -> int:
    return max(range(len(values)), key=lambda i: values[i])


@pytest.mark.time_limit(300)
def test_local_completions_scores_equal_the_service_log_probabilities(service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lm_eval
    from lm_eval.tasks import TaskManager

    monkeypatch.setenv("OPENAI_API_KEY", service.keys["alice"])
    results = lm_eval.simple_evaluate(
        model="local-completions",
        model_args={
            "model": MODEL,
            "base_url": f"{service.url}/v1/completions",
            # The tokenizer endpoints take the key as Authorization (lm-eval sends OPENAI_API_KEY to completions only).
            "auth_token": service.keys["alice"],
            "max_retries": 1,
            "num_concurrent": 1,
        },
        tasks=["srl_mc"],
        task_manager=TaskManager(include_path=str(_task_dir(tmp_path))),
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    # The tokenizer lm-eval used is the service's (no hand-made one: nothing could be downloaded).
    assert results["config"]["model"] == "local-completions"
    scores = results["results"]["srl_mc"]
    samples = sorted(results["samples"]["srl_mc"], key=lambda s: s["doc_id"])
    assert len(samples) == 24

    correct = correct_norm = 0
    for item, sample in zip(_items(), samples, strict=True):
        context = f"Question: {item['question']}\nAnswer:"
        lls = [_continuation_logprob(service, context, f" {choice}") for choice in item["choices"]]
        # lm-eval's own log-likelihoods of the same items agree with the direct ones.
        theirs = [resp[0] for resp in sample["filtered_resps"]]
        for mine, other in zip(lls, theirs, strict=True):
            assert math.isclose(mine, float(other), abs_tol=1e-3), (item["question"], lls, theirs)
        correct += _argmax(lls) == item["answer"]
        correct_norm += _argmax([ll / len(choice) for ll, choice in zip(lls, item["choices"], strict=True)]) == item["answer"]
    assert scores["acc,none"] == correct / len(samples)
    assert scores["acc_norm,none"] == correct_norm / len(samples)
    # SmolLM2 knows these better than chance (1/3).
    assert scores["acc,none"] > 0.5


@pytest.mark.time_limit(300)
def test_local_chat_completions_generates_until(service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lm_eval
    from lm_eval.tasks import TaskManager

    monkeypatch.setenv("OPENAI_API_KEY", service.keys["alice"])
    results = lm_eval.simple_evaluate(
        model="local-chat-completions",
        model_args={"model": MODEL, "base_url": f"{service.url}/v1/chat/completions", "max_retries": 1, "num_concurrent": 1},
        tasks=["srl_gen"],
        task_manager=TaskManager(include_path=str(_task_dir(tmp_path))),
        apply_chat_template=True,
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    samples = results["samples"]["srl_gen"]
    assert len(samples) == 6
    answers = [sample["resps"][0][0] for sample in samples]
    assert all(isinstance(answer, str) and answer.strip() for answer in answers), answers
    # At most max_gen_toks (8) tokens each, as the service counts them.
    assert all(len(_tokens(service, answer)) <= 8 for answer in answers), answers
    assert 0.0 <= results["results"]["srl_gen"]["exact_match,none"] <= 1.0
