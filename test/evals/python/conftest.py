"""The harness of the evaluation tests: lm-evaluation-harness 0.4.13 against the service.

The same server as the wandb / ART and Tinker tests (test/support/python/srl_pytest_server.py: one
server for the session, started by test/support/serve-for-pytest.ts, with the tiny built-in base
models, SmolLM2-135M-Instruct Q4_1 as `smollm2` (the default model of the tokenizer endpoints
there: the first BASE_MODELS entry) and API keys of two entities; a time limit per test,
`@pytest.mark.time_limit(seconds)`, default 120 s). Everything runs offline: no Hugging Face hub
access at all (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, a fresh HF_HOME), the task's data are local
JSON files and the tokenizer is the service's (/tokenizer_info, /tokenize, /detokenize).

Run with the lm-eval client environment (scripts/install-client-env.sh lm-eval-0.4.13):
    .cache/clients/lm-eval-0.4.13/bin/python -m pytest test/evals/python -q
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support" / "python"))
from srl_pytest_server import (  # noqa: E402, F401
    REPO_ROOT,
    Service,
    TimeLimitExceeded,
    pytest_configure,
    pytest_runtest_makereport,
    service,
    time_limit,
)

# Read at import by huggingface_hub / datasets / transformers: set before lm_eval is imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _offline_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh Hugging Face cache per test: nothing comes from a cache the machine already has."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
