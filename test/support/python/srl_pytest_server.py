"""The server harness the Python client tests share (test/wandb/python, test/tinker/python).

One real server for the whole pytest session (test/support/serve-for-pytest.ts: an isolated
embedded database, the server process with its training worker, the tiny built-in base models and
SmolLM2-135M-Instruct Q4_1 as `smollm2`, API keys of two entities), its log and the harness's
stderr attached to every failed test's report, and a time limit per test (SIGALRM;
`@pytest.mark.time_limit(seconds)`, default 120 s) after which the stacks of all threads are
dumped and the test fails, so a client that retries forever cannot hang the run.

A conftest.py uses it by importing the hooks and fixtures into its own namespace, where pytest
finds them:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support" / "python"))
    from srl_pytest_server import Service, pytest_configure, pytest_runtest_makereport, service, time_limit
"""

from __future__ import annotations

import faulthandler
import json
import os
import selectors
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
HARNESS = "test/support/serve-for-pytest.ts"
STARTUP_TIMEOUT_S = 240.0
DEFAULT_TIME_LIMIT_S = 120.0


@dataclass(frozen=True)
class Service:
    """The running server: its base URL and one API key and entity per user."""

    url: str
    keys: dict[str, str]
    entities: dict[str, str]
    log_file: str

    @property
    def key(self) -> str:
        return self.keys["alice"]

    @property
    def entity(self) -> str:
        return self.entities["alice"]

    def get(self, path: str, key: str | None = None) -> tuple[int, Any]:
        """GET a JSON route of the service's own API with a Bearer key; (status, parsed body)."""
        request = urllib.request.Request(
            self.url + path, headers={"Authorization": f"Bearer {key or self.key}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            body = error.read()
            try:
                return error.code, json.loads(body or b"null")
            except ValueError:
                return error.code, body.decode(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(Path(self.log_file).read_text(errors="replace").splitlines()[-lines:])
        except OSError as error:
            return f"(no server log: {error})"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "time_limit(seconds): fail the test (stacks dumped) after this many seconds"
    )


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------

_service: Service | None = None
_harness: tuple[subprocess.Popen[bytes], Path] | None = None


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    global _service, _harness
    stderr_path = tmp_path_factory.mktemp("serve") / "serve-for-pytest.stderr"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            ["node", "--import", "tsx", HARNESS],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    _harness = (process, stderr_path)
    try:
        ready = _read_ready_line(process, stderr_path)
        _service = Service(
            url=ready["url"], keys=ready["keys"], entities=ready["entities"], log_file=ready["log_file"]
        )
        yield _service
    finally:
        _service = None
        _harness = None
        _stop(process)


def _read_ready_line(process: subprocess.Popen[bytes], stderr_path: Path) -> dict[str, Any]:
    assert process.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    buffered = b""
    while b"\n" not in buffered:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(
                f"{HARNESS} printed no ready line in {STARTUP_TIMEOUT_S:.0f} s; its stderr:\n"
                + stderr_path.read_text(errors="replace")
            )
        if selector.select(timeout=min(left, 1.0)):
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                process.wait(timeout=30)
                raise RuntimeError(
                    f"{HARNESS} exited ({process.returncode}) before it was ready; its stderr:\n"
                    + stderr_path.read_text(errors="replace")
                )
            buffered += chunk
    line = buffered.split(b"\n", 1)[0]
    ready: dict[str, Any] = json.loads(line)
    return ready


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Closing stdin asks the harness to stop everything; SIGTERM, then SIGKILL, if it does not."""
    if process.stdin is not None:
        try:
            process.stdin.close()
        except OSError:
            pass
    for escalate in (None, process.terminate, process.kill):
        if escalate is not None:
            escalate()
        try:
            process.wait(timeout=60)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.failed and _service is not None:
        report.sections.append(("server log (last lines)", _service.log_tail()))
    if report.failed and _harness is not None:
        process, stderr_path = _harness
        state = "running" if process.poll() is None else f"EXITED with {process.returncode}"
        report.sections.append(
            (f"{HARNESS} ({state}), its stderr", stderr_path.read_text(errors="replace")[-4000:])
        )


# ---------------------------------------------------------------------------------------------
# A time limit per test
# ---------------------------------------------------------------------------------------------


class TimeLimitExceeded(BaseException):
    """Raised in the main thread when a test runs past its time limit.

    A BaseException, so client code that catches Exception (retry loops) cannot swallow it."""


@pytest.fixture(autouse=True)
def time_limit(request: pytest.FixtureRequest) -> Iterator[None]:
    marker = request.node.get_closest_marker("time_limit")
    seconds = float(marker.args[0]) if marker is not None else DEFAULT_TIME_LIMIT_S

    def expired(signum: int, frame: FrameType | None) -> None:
        sys.stderr.write(f"\n--- {request.node.nodeid}: over its {seconds:.0f} s limit; stacks of all threads:\n")
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        raise TimeLimitExceeded(f"{request.node.nodeid} did not finish within {seconds:.0f} s (stacks on stderr)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
