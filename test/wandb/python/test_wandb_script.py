"""(d) A plain wandb script against the service (WANDB_BASE_URL + a service key): wandb.init,
wandb.log a few steps, run.summary, run.config, run.finish; the metrics are then the run's
history in the service's own API (GET /v1/preview/runs/{id}/metrics), which another entity's key
cannot see. Resuming the run brings its config and summary back and continues its steps."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
import wandb

from conftest import PROJECT, Service, WandbEnv

LOGGED: list[dict[str, float]] = [
    {"train/loss": 1.5, "score": 0.25},
    {"train/loss": 1.0, "score": 0.5},
    {"train/loss": 0.75, "score": 0.625},
]


def history(service: Service, run_id: str, key: str | None = None) -> tuple[int, list[dict[str, Any]]]:
    """Every point of the run's history in the service's API (following has_more)."""
    points: list[dict[str, Any]] = []
    after = ""
    while True:
        status, body = service.get(f"/v1/preview/runs/{run_id}/metrics?limit=1000{after}", key)
        if status != 200:
            return status, [body]
        points.extend(body["data"])
        if not body["has_more"]:
            return status, points
        after = f"&after={body['last_id']}"


def logged_run(env: WandbEnv) -> str:
    """The plain script: returns the run's id."""
    run = wandb.init(
        entity=env.service.entity,
        project=PROJECT,
        name=f"script-{uuid.uuid4().hex[:6]}",
        config={"learning_rate": 0.01, "layers": 2, "optimizer": "adam"},
    )
    for row in LOGGED:
        wandb.log(row)
    run.summary["best_score"] = 0.625
    run.config.update({"batch_size": 8})
    run_id = run.id
    run.finish()
    return run_id


@pytest.mark.time_limit(90)
def test_logged_metrics_are_the_runs_history(wandb_env_with_key: WandbEnv, wandb_served: None) -> None:
    service = wandb_env_with_key.service
    run_id = logged_run(wandb_env_with_key)

    status, points = history(service, run_id)
    assert status == 200, points
    mine = sorted(
        ((p["step"], p["name"], p["value"]) for p in points if p["name"] in ("train/loss", "score")),
    )
    expected = sorted((step, name, value) for step, row in enumerate(LOGGED) for name, value in row.items())
    assert [(s, n) for s, n, _ in mine] == [(s, n) for s, n, _ in expected], points
    for (_, name, got), (_, _, want) in zip(mine, expected):
        assert math.isclose(got, want, rel_tol=1e-9), (name, got, want)

    status, run = service.get(f"/v1/preview/runs/{run_id}")
    assert status == 200, run
    assert run["entity"] == service.entity and run["project"] == PROJECT
    # run.summary["best_score"] = ... is the run's summary (W&B shows it beside the last values).
    assert run["summary"].get("best_score") == 0.625, f"run.summary's best_score is not in the run's summary: {run['summary']}"
    assert run["summary"].get("train/loss") == 0.75, run["summary"]

    # Another entity's key sees neither the run nor its history.
    other = service.keys["bob"]
    status, body = service.get(f"/v1/preview/runs/{run_id}/metrics", other)
    assert status == 404, body
    status, body = service.get(f"/v1/preview/runs/{run_id}", other)
    assert status == 404, body


@pytest.mark.time_limit(90)
def test_resumed_run_keeps_config_summary_and_steps(wandb_env_with_key: WandbEnv, wandb_served: None) -> None:
    service = wandb_env_with_key.service
    run_id = logged_run(wandb_env_with_key)

    run = wandb.init(entity=service.entity, project=PROJECT, id=run_id, resume="must")
    assert run.id == run_id
    assert run.config["learning_rate"] == 0.01 and run.config["optimizer"] == "adam", dict(run.config)
    assert run.config["batch_size"] == 8, dict(run.config)
    assert run.summary["best_score"] == 0.625, dict(run.summary)
    # The run continues after its last step. (`run.step` reads 0 here in wandb 0.28+ until the
    # first log: wandb-core answers it from its own history state, not the resumed one; the
    # logged steps below show where the run really continues.)
    assert run.starting_step == len(LOGGED), run.starting_step
    wandb.log({"score": 0.75})
    run.finish()

    status, points = history(service, run_id)
    assert status == 200, points
    scores = sorted((p["step"], p["value"]) for p in points if p["name"] == "score")
    assert scores == [(0, 0.25), (1, 0.5), (2, 0.625), (3, 0.75)], points
