"""(h) Weave, which ART 0.5.20+ installs: once imported, `wandb.init` starts it against
WANDB_BASE_URL/traces. The service serves no trace server, so weave's first call
(`GET /traces/server_info`) must get a JSON 404 (not the console's HTML with 200), weave must
switch itself off with one warning, and the run must go on. With the key in WANDB_API_KEY (what
the README tells weave users) nothing prompts. Run in a fresh interpreter with stdin closed, as a
script would, in the client environments that have weave."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import PROJECT, WandbEnv

pytestmark = pytest.mark.skipif(importlib.util.find_spec("weave") is None, reason="weave is not installed here")

SCRIPT = """
import json, sys
import weave, wandb
entity, project = sys.argv[1], sys.argv[2]
run = wandb.init(entity=entity, project=project, name="weave-start")
run.log({"reward": 0.5})
run_id = run.id
run.finish()
print(json.dumps({"run": run_id, "weave_client": weave.get_client() is not None}))
"""


@pytest.mark.time_limit(120)
def test_weave_starts_against_the_service_without_html_or_a_prompt(wandb_env_with_key: WandbEnv, wandb_served: None) -> None:
    service = wandb_env_with_key.service
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, service.entity, PROJECT],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "WANDB_SILENT": "false"},
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert time.monotonic() - started < 60, output[-4000:]
    assert "Paste an API key" not in output and "Enter your Weights & Biases API key" not in output, output[-4000:]
    assert "<html" not in output.lower() and "JSONDecodeError" not in output, output[-4000:]
    # weave said why it is off: the trace server answered 404.
    assert "Weave is not available on the server" in output and "404" in output, output[-4000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["weave_client"] is False
    status, run = service.get(f"/v1/preview/runs/{summary['run']}")
    assert status == 200 and run["summary"].get("reward") == 0.5, run
