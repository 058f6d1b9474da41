"""(g) Reading a run back with the wandb SDK's public API, as users of every SDK version do: a plain
script logs (wandb.init, run.log with numbers and a string, the summary, the config, an artifact),
then `wandb.Api()` reads the run (`api.run(path)`: config, summary, `run.history()`,
`run.scan_history()`), lists the project's runs, and downloads the artifact byte for byte. Run in
every client environment of the matrix (wandb 0.25.0, 0.28.0, 0.31.0)."""

from __future__ import annotations

import hashlib
import inspect
import math
import uuid
from pathlib import Path
from typing import Any

import pytest
import wandb

from conftest import PROJECT, WandbEnv

ROWS: list[dict[str, Any]] = [
    {"loss": 2.5, "accuracy": 0.125, "phase": "warmup"},
    {"loss": 1.75, "accuracy": 0.375, "phase": "train"},
    {"loss": 1.25, "accuracy": 0.5, "phase": "train"},
    {"loss": 1.0, "accuracy": 0.625, "phase": "eval", "extra": 7},
]


def logged_run(env: WandbEnv, artifact_file: Path) -> tuple[str, str]:
    """The script: returns (run id, the artifact's name)."""
    run = wandb.init(
        entity=env.service.entity,
        project=PROJECT,
        name=f"reads-{uuid.uuid4().hex[:6]}",
        config={"learning_rate": 0.003, "layers": 4},
    )
    for row in ROWS:
        run.log(row)
    run.summary["best_accuracy"] = 0.625
    artifact_name = f"reads-data-{uuid.uuid4().hex[:6]}"
    artifact = wandb.Artifact(artifact_name, type="dataset", metadata={"rows": 3})
    artifact.add_file(str(artifact_file), name="data/train.jsonl")
    run.log_artifact(artifact)
    run_id = run.id
    run.finish()
    return run_id, artifact_name


SCAN_PARAMETERS = set(inspect.signature(wandb.apis.public.Run.scan_history).parameters)


def same(got: Any, want: Any) -> bool:
    if isinstance(want, float):
        return isinstance(got, (int, float)) and math.isclose(float(got), want, rel_tol=1e-9)
    return bool(got == want)


@pytest.mark.time_limit(120)
def test_api_reads_back_what_the_run_logged(wandb_env_with_key: WandbEnv, wandb_served: None, tmp_path: Path) -> None:
    env = wandb_env_with_key
    data = tmp_path / "train.jsonl"
    data.write_bytes(b"".join(b'{"text": "row %d"}\n' % i for i in range(3)))
    run_id, artifact_name = logged_run(env, data)

    api = wandb.Api(timeout=30)
    run = api.run(f"{env.service.entity}/{PROJECT}/{run_id}")
    assert run.id == run_id
    assert run.config.get("learning_rate") == 0.003 and run.config.get("layers") == 4, run.config
    assert run.summary.get("best_accuracy") == 0.625, dict(run.summary)
    assert run.summary.get("loss") == 1.0, dict(run.summary)

    # Every row, in order, with the keys it was logged with (and _step).
    scanned = list(run.scan_history())
    assert [row.get("_step") for row in scanned] == list(range(len(ROWS))), scanned
    for got, want in zip(scanned, ROWS):
        for key, value in want.items():
            assert same(got.get(key), value), (key, got, want)
    # With keys and nothing cached, wandb-core (0.28+) reads the parquet files by byte ranges.
    only_loss = list(run.scan_history(keys=["loss"], use_cache=False) if "use_cache" in SCAN_PARAMETERS else run.scan_history(keys=["loss"]))
    assert [row["loss"] for row in only_loss] == [row["loss"] for row in ROWS], only_loss

    # run.history(): the sampled rows (all of them, so few): a pandas DataFrame where pandas is
    # installed, else the SDK's list of rows.
    sampled = run.history()
    if isinstance(sampled, list):
        columns = {key: [row.get(key) for row in sampled] for key in ("_step", "loss", "phase")}
    else:
        columns = {key: list(sampled[key]) for key in ("_step", "loss", "phase")}
    assert [int(x) for x in columns["_step"]] == list(range(len(ROWS))), sampled
    assert [float(x) for x in columns["loss"]] == [row["loss"] for row in ROWS], sampled
    assert columns["phase"] == [row["phase"] for row in ROWS], sampled
    listed = run.history(keys=["accuracy"], pandas=False)
    assert [row["accuracy"] for row in listed] == [row["accuracy"] for row in ROWS], listed

    # The project's runs include this one.
    assert run_id in {r.id for r in api.runs(f"{env.service.entity}/{PROJECT}")}

    artifact = api.artifact(f"{env.service.entity}/{PROJECT}/{artifact_name}:latest", type="dataset")
    assert artifact.metadata.get("rows") == 3, artifact.metadata
    assert artifact.logged_by() is not None and artifact.logged_by().id == run_id
    root = Path(artifact.download(root=str(tmp_path / "download")))
    got = (root / "data" / "train.jsonl").read_bytes()
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data.read_bytes()).hexdigest()
