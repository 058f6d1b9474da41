"""The harness of the wandb / ART Python tests.

One real server for the whole session (test/support/serve-for-pytest.ts: an isolated embedded
database, the server process with its training worker, the tiny built-in base models and
SmolLM2-135M-Instruct Q4_1 as `smollm2`, API keys of two entities), and per test an environment
for the wandb SDK that points it at that server and keeps everything it writes in the test's tmp
directory (nothing under ~/.config, ~/.netrc or ~/.cache/wandb). Every test has a time limit
(SIGALRM; `@pytest.mark.time_limit(seconds)`, default 120 s) after which the stacks of all
threads are dumped and the test fails, so a client that retries forever cannot hang the run.
The server, the time limit and the failure reports are test/support/python/srl_pytest_server.py,
shared with the Tinker tests (test/tinker/python).

Run with any client environment of the matrix (scripts/test.sh runs each):
    .cache/art-client-venv/bin/python -m pytest test/wandb/python -q     # ART 0.5.18, wandb 0.25.0
    .cache/clients/art-0.5.23/bin/python -m pytest test/wandb/python -q  # ART 0.5.23, wandb 0.31.0
    .cache/clients/wandb-0.28.0/bin/python -m pytest test/wandb/python/test_wandb_*.py -q
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support" / "python"))
# The hooks and fixtures pytest finds here (imported into this conftest's namespace), and what the
# tests import from conftest.
from srl_pytest_server import (  # noqa: E402, F401
    REPO_ROOT,
    Service,
    TimeLimitExceeded,
    pytest_configure,
    pytest_runtest_makereport,
    service,
    time_limit,
)

if TYPE_CHECKING:  # imported by the tests once the environment below is set
    import art
    from art.serverless.backend import ServerlessBackend

# Read at import by litellm (imported by `art`) and by the wandb SDK: set before any test module
# imports them.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm would fetch a price list at import
os.environ["WANDB_SILENT"] = "true"
os.environ["WANDB_ERROR_REPORTING"] = "false"  # no Sentry reports from the SDK
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# ---------------------------------------------------------------------------------------------
# The wandb SDK's environment
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WandbEnv:
    service: Service
    root: Path
    api_key_in_env: bool


def _wandb_env(
    service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api_key_in_env: bool
) -> Iterator[WandbEnv]:
    for name in list(os.environ):
        if name.startswith("WANDB_") and name not in ("WANDB_SILENT", "WANDB_ERROR_REPORTING"):
            monkeypatch.delenv(name)
    root = tmp_path / "wandb-env"
    dirs = {
        "WANDB_DIR": root / "dir",
        "WANDB_CACHE_DIR": root / "cache",
        "WANDB_CONFIG_DIR": root / "config",
        "WANDB_DATA_DIR": root / "data",
        "WANDB_ARTIFACT_DIR": root / "artifacts",
    }
    for name, path in dirs.items():
        path.mkdir(parents=True)
        monkeypatch.setenv(name, str(path))
    monkeypatch.setenv("WANDB_BASE_URL", service.url)
    monkeypatch.setenv("WANDB_CREDENTIALS_FILE", str(root / "config" / "credentials.json"))
    monkeypatch.setenv("NETRC", str(root / "netrc"))  # wandb.login(key=...) writes one
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", "60")
    monkeypatch.setenv("WANDB_DISABLE_GIT", "true")
    if api_key_in_env:
        monkeypatch.setenv("WANDB_API_KEY", service.key)
    # ART writes checkpoints it pulls or forks under tempfile.gettempdir().
    scratch = root / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    try:
        yield WandbEnv(service=service, root=root, api_key_in_env=api_key_in_env)
    finally:
        # The SDK keeps a process-wide singleton (settings read from the environment at setup)
        # and a wandb-core service process: end both, so the next test starts clean.
        if "wandb" in sys.modules:
            import wandb

            if wandb.run is not None:
                wandb.run.finish(exit_code=1)
            wandb.teardown()


@pytest.fixture
def wandb_env(service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WandbEnv]:
    """WANDB_BASE_URL set, WANDB_API_KEY not: ART hands the key to the SDK itself."""
    yield from _wandb_env(service, tmp_path, monkeypatch, api_key_in_env=False)


@pytest.fixture
def wandb_env_with_key(service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WandbEnv]:
    """WANDB_BASE_URL and WANDB_API_KEY set, as ART's docs tell users to."""
    yield from _wandb_env(service, tmp_path, monkeypatch, api_key_in_env=True)


@pytest.fixture(scope="session")
def wandb_served(service: Service) -> None:
    """Fails at once, saying why, when the service does not answer the wandb SDK's first request
    (a GraphQL query at /graphql, HTTP basic auth `api:<key>`), instead of letting the SDK retry."""
    token = base64.b64encode(f"api:{service.key}".encode()).decode()
    request = urllib.request.Request(
        service.url + "/graphql",
        data=json.dumps({"query": "query Viewer { viewer { id entity } }"}).encode(),
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30):
            return
    except urllib.error.HTTPError as error:
        if error.code in (404, 405, 501):
            pytest.fail(
                f"the service does not serve W&B's GraphQL API: POST {service.url}/graphql answered "
                f"HTTP {error.code} ({error.read()[:200]!r}); the wandb SDK (and ART's train_sft, "
                "checkpoint pull and fork, wandb.init) cannot work against it until it does (issue 14)",
                pytrace=False,
            )
        # Any other answer (401, 400, 500, ...) is for the test itself to meet through the SDK.


# ---------------------------------------------------------------------------------------------
# The ART client, as a user drives it
# ---------------------------------------------------------------------------------------------

PROJECT = "pytest-wandb"


class ArtTools:
    """Small steps of ART's documented loop, shared by the tests (real clients only)."""

    def __init__(self, service: Service, base_path: Path) -> None:
        self.service = service
        self.base_path = base_path

    def backend(self, key: str | None = None) -> ServerlessBackend:
        from art.serverless.backend import ServerlessBackend

        return ServerlessBackend(api_key=key or self.service.key, base_url=self.service.url + "/v1")

    async def register(self, backend: ServerlessBackend, base_model: str, prefix: str) -> art.TrainableModel:
        """A new TrainableModel of a unique name, registered (its step is 0)."""
        import uuid

        import art

        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        # ART 0.5.20+ names a model's checkpoints and W&B run by its required `run_name` (`name`
        # stays the serving alias); 0.5.18 has no such field.
        naming = {"run_name": name} if "run_name" in art.TrainableModel.model_fields else {}
        model = art.TrainableModel(
            name=name, project=PROJECT, base_model=base_model, base_path=str(self.base_path), **naming
        )
        await model.register(backend)
        return model

    async def rollouts(
        self, model: art.TrainableModel, prompts: list[str], per_group: int = 2, max_tokens: int = 8
    ) -> list[art.TrajectoryGroup]:
        """One group per prompt, `per_group` sampled completions each through
        model.openai_client(), rewarded 0, 1, ... within the group (so every group trains)."""
        import art

        client = model.openai_client()
        groups: list[art.TrajectoryGroup] = []
        for prompt in prompts:
            trajectories: list[art.Trajectory] = []
            for i in range(per_group):
                messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
                completion = await client.chat.completions.create(
                    model=model.get_inference_name(),
                    messages=messages,
                    max_tokens=max_tokens,
                    temperature=1.0,
                    logprobs=True,
                )
                trajectories.append(
                    art.Trajectory(messages_and_choices=[*messages, completion.choices[0]], reward=float(i))
                )
            groups.append(art.TrajectoryGroup(trajectories))
        return groups

    async def greedy(
        self, model: art.TrainableModel, step: int | None, prompt: str, max_tokens: int = 12
    ) -> tuple[str, list[float]]:
        """Greedy text of a step (None: the model's latest) and the log-probabilities of its tokens."""
        completion = await model.openai_client().chat.completions.create(
            model=model.get_inference_name(step=step),
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=0,
            logprobs=True,
        )
        choice = completion.choices[0]
        logprobs = [t.logprob for t in (choice.logprobs.content or [])] if choice.logprobs else []
        return choice.message.content or "", logprobs

    async def fingerprint(self, model: art.TrainableModel, step: int | None) -> str:
        """The `system_fingerprint` of a step's answer (None: the model's latest): equal exactly when
        the same weights answered. Two greedy answers of the same weights may still differ: a cached
        prompt prefix is evaluated in another batch shape, and a near tie can turn."""
        completion = await model.openai_client().chat.completions.create(
            model=model.get_inference_name(step=step),
            messages=[{"role": "user", "content": "Hi"}],
            max_tokens=1,
        )
        assert completion.system_fingerprint, completion
        return completion.system_fingerprint


def art_version() -> tuple[int, ...]:
    """The installed openpipe-art's version, as numbers."""
    from importlib.metadata import version

    return tuple(int(part) for part in version("openpipe-art").split(".")[:3])


# torch, transformers and peft, for steps a user runs in their own script beside the client (loading
# a pulled checkpoint): the trainer's environment has them, the ART 0.5.23 environment does not.
TRAINER_PYTHON = REPO_ROOT / ".cache" / "trainer-venv" / "bin" / "python"


@pytest.fixture
def art_tools(service: Service, tmp_path: Path) -> ArtTools:
    return ArtTools(service, tmp_path / ".art")
