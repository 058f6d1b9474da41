"""A plain wandb script logs a dataset artifact of 1, 16 and 60 MiB files through the SDK's own
upload path (createArtifact, createArtifactFiles, PUTs to the signed upload URLs, the manifest,
commitArtifact), and `wandb.Api().artifact(...).download()` gets every byte back: the service
streams each upload into its blob store, whatever its size up to the body limit."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import pytest
import wandb

from conftest import PROJECT, WandbEnv

SIZES = {"small.bin": 1 << 20, "medium.bin": 16 << 20, "large.bin": 60 << 20}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@pytest.mark.time_limit(300)
def test_log_and_download_artifact_files_up_to_60_mib(wandb_env_with_key: WandbEnv, wandb_served: None, tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    expected: dict[str, str] = {}
    for name, size in SIZES.items():
        (source / name).write_bytes(os.urandom(size))
        expected[name] = sha256_of(source / name)

    collection = f"sizes-{uuid.uuid4().hex[:6]}"
    run = wandb.init(entity=wandb_env_with_key.service.entity, project=PROJECT, name=f"blobs-{uuid.uuid4().hex[:6]}")
    artifact = wandb.Artifact(collection, type="dataset")
    artifact.add_dir(str(source))
    logged = run.log_artifact(artifact)
    logged.wait()
    run.finish()

    api = wandb.Api()
    fetched = api.artifact(f"{wandb_env_with_key.service.entity}/{PROJECT}/{collection}:latest")
    assert sorted(file.name for file in fetched.files()) == sorted(SIZES), [file.name for file in fetched.files()]
    target = Path(fetched.download(root=str(tmp_path / "downloaded")))
    for name, digest in expected.items():
        assert (target / name).stat().st_size == SIZES[name], name
        assert sha256_of(target / name) == digest, name
