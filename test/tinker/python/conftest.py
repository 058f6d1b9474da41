"""The harness of the Tinker API tests: the real `tinker` SDK against the service's /api/v1.

The same server as the wandb / ART tests (test/support/python/srl_pytest_server.py: one server
for the session, started by test/support/serve-for-pytest.ts, with the tiny built-in base models,
SmolLM2-135M-Instruct Q4_1 as `smollm2` and API keys of two entities, alice and bob; a time limit
per test, `@pytest.mark.time_limit(seconds)`, default 120 s). The SDK is pointed at it the way a
user points it at Thinking Machines' service:
    export TINKER_BASE_URL=http://127.0.0.1:PORT    # the service itself (the SDK adds /api/v1/...)
    export TINKER_API_KEY=tml-<a service key>       # the SDK insists on the `tml-` prefix
    export HF_ENDPOINT=http://127.0.0.1:PORT/hf     # get_tokenizer(): transformers' AutoTokenizer
and every client a test makes is closed when the test ends (its session heartbeats stop). The
Hugging Face cache (HF_HOME) is a fresh directory of the session: tokenizers come from the service.

Run with any Tinker client environment (scripts/install-client-env.sh NAME; scripts/test.sh runs
each): tinker-0.38.0 (the SDK 0.38.0 and tinker-cookbook 0.6.1, whose sl_loop / rl_loop recipes
test_tinker_cookbook.py runs), tinker-0.34.0 (the SDK line ART 0.5.23's `tinker` extra pins,
`tinker>=0.34.0,<0.35`; no cookbook, so test_tinker_cookbook.py is skipped there) and
art-0.5.23-tinker (ART 0.5.23's TinkerNativeBackend, test_art_tinker_native.py; skipped elsewhere):
    .cache/clients/tinker-0.38.0/bin/python -m pytest test/tinker/python -q
    .cache/clients/tinker-0.34.0/bin/python -m pytest test/tinker/python -q
    .cache/clients/art-0.5.23-tinker/bin/python -m pytest test/tinker/python/test_art_tinker_native.py -q
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support" / "python"))
# The hooks and fixtures pytest finds here (imported into this conftest's namespace).
from srl_pytest_server import (  # noqa: E402, F401
    REPO_ROOT,
    Service,
    TimeLimitExceeded,
    pytest_configure,
    pytest_runtest_makereport,
    service,
    time_limit,
)

if TYPE_CHECKING:
    import tinker

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

USERS = ("alice", "bob")


def tinker_key(service: Service, user: str = "alice") -> str:
    """The service key of `user` as the SDK wants it (`tml-` + the key)."""
    return "tml-" + service.keys[user]


def post_api(service: Service, path: str, body: Any, user: str = "alice") -> tuple[int, Any]:
    """POST JSON to a Tinker route with `X-API-Key: tml-<key>`, as the SDK does; (status, body)."""
    request = urllib.request.Request(
        service.url + path,
        data=json.dumps(body).encode(),
        headers={"X-API-Key": tinker_key(service, user), "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw or b"null")
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw or b"null")
        except ValueError:
            return error.code, raw.decode(errors="replace")


@pytest.fixture(scope="session")
def tinker_served(service: Service) -> Service:
    """Fails at once, saying why, when the service does not answer the SDK's first request (POST
    /api/v1/client/config), instead of letting the SDK retry for minutes."""
    status, body = post_api(
        service, "/api/v1/client/config", {"sdk_version": importlib.metadata.version("tinker")}
    )
    if status != 200:
        pytest.fail(
            f"the service does not serve the Tinker API: POST {service.url}/api/v1/client/config "
            f"answered HTTP {status} ({str(body)[:200]!r}); the tinker SDK cannot work against it",
            pytrace=False,
        )
    return service


class TinkerClients:
    """Makes the SDK's clients for the test's users and closes them all when the test ends."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._service_clients: list[tinker.ServiceClient] = []

    def key(self, user: str = "alice") -> str:
        return tinker_key(self.service, user)

    def service_client(self, user: str = "alice") -> tinker.ServiceClient:
        import tinker

        client = tinker.ServiceClient(base_url=self.service.url, api_key=self.key(user))
        self._service_clients.append(client)
        return client

    def rest_client(self, user: str = "alice", api_key: str | None = None) -> tinker.RestClient:
        """tinker.RestClient() (SDK 0.38; 0.34 has only ServiceClient.create_rest_client())."""
        import tinker

        key = api_key or self.key(user)
        if hasattr(tinker, "RestClient"):
            return tinker.RestClient(base_url=self.service.url, api_key=key)
        client = tinker.ServiceClient(base_url=self.service.url, api_key=key)
        self._service_clients.append(client)
        return client.create_rest_client()

    def close(self) -> list[str]:
        """Finishes every session a test left open; returns the errors (the test has ended)."""
        errors: list[str] = []
        for client in self._service_clients:
            try:
                client.close("success").result(timeout=30)
            except Exception as error:  # noqa: BLE001 - reported, not raised: cleanup only
                errors.append(f"{type(error).__name__}: {error}")
        self._service_clients.clear()
        return errors


@pytest.fixture(scope="session")
def hf_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hf-home")


@pytest.fixture
def tinker_clients(
    tinker_served: Service, hf_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TinkerClients]:
    """The environment a user sets (TINKER_BASE_URL, TINKER_API_KEY = alice's, HF_ENDPOINT = the
    service's /hf), nothing else of the SDK's (no TINKER_CREDENTIAL_CMD, project or tags) nor of
    huggingface_hub's (no token, not offline; the session's own HF_HOME), and a factory of clients
    for alice and bob that are closed when the test ends."""
    for name in list(os.environ):
        if name.startswith(("TINKER_", "HF_")) or name in ("TRANSFORMERS_OFFLINE", "HUGGING_FACE_HUB_TOKEN"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TINKER_BASE_URL", tinker_served.url)
    monkeypatch.setenv("TINKER_API_KEY", tinker_key(tinker_served, "alice"))
    monkeypatch.setenv("HF_ENDPOINT", tinker_served.url + "/hf")
    monkeypatch.setenv("HF_HOME", str(hf_home))
    clients = TinkerClients(tinker_served)
    try:
        yield clients
    finally:
        clients.close()
