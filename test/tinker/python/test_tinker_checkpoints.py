"""Training state with the Tinker SDK: save_state writes the adapter and its optimizer state as
`tinker://{run}/weights/{name}`; a training client made from it with its optimizer
(create_training_client_from_state_with_optimizer, or the deprecated load_state_with_optimizer on a
live client) trains on exactly as the original did, loss for loss; one made without it
(create_training_client_from_state) starts from the same weights with a fresh optimizer. And what
RestClient says about runs and checkpoints: list_checkpoints, get_weights_info_by_tinker_path,
get_training_run, delete_checkpoint."""

from __future__ import annotations

import math
import warnings

import pytest
import tinker
from tinker import types

from conftest import TinkerClients
from tinker_steps import FACT_ANSWER, FACT_PROMPT, ready, refused, sft_datum, sft_step

BASE = "tiny-chat"
LR = 1e-2


def _data() -> list[types.Datum]:
    return [sft_datum(FACT_PROMPT, FACT_ANSWER), sft_datum(FACT_PROMPT[2:], FACT_ANSWER[:2])]


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6) for x, y in zip(a, b))


def _train_save_continue(service_client: tinker.ServiceClient) -> tuple[tinker.TrainingClient, str, list[float]]:
    """Two steps, save_state("ckpt"), two more: the client, the checkpoint's path and the losses
    of the two steps after it."""
    data = _data()
    original = ready(service_client.create_lora_training_client(base_model=BASE, rank=8, seed=3))
    first = [sft_step(original, data, LR) for _ in range(2)]
    saved = original.save_state("ckpt").result()
    assert saved.path.startswith("tinker://") and saved.path.endswith("/weights/ckpt"), saved.path
    continued = [sft_step(original, data, LR) for _ in range(2)]
    assert continued[0] < first[0], (first, continued)
    return original, saved.path, continued


def _check_fresh_optimizer(without: list[float], continued: list[float]) -> None:
    """The same weights (the first loss), a fresh Adam (the next loss differs)."""
    assert math.isclose(without[0], continued[0], rel_tol=1e-5, abs_tol=1e-6), (without, continued)
    assert not math.isclose(without[1], continued[1], rel_tol=1e-4, abs_tol=1e-5), (
        f"a fresh optimizer gave the same second loss as the restored one ({without} vs {continued})"
    )


@pytest.mark.time_limit(120)
def test_training_client_from_state_resumes_loss_for_loss(tinker_clients: TinkerClients) -> None:
    service_client = tinker_clients.service_client()
    original, path, continued = _train_save_continue(service_client)

    resumed = ready(service_client.create_training_client_from_state_with_optimizer(path))
    assert resumed.model_id != original.model_id
    again = [sft_step(resumed, _data(), LR) for _ in range(2)]
    assert _same(again, continued), f"resumed with its optimizer: {again}, the original went on with {continued}"

    fresh = ready(service_client.create_training_client_from_state(path))
    _check_fresh_optimizer([sft_step(fresh, _data(), LR) for _ in range(2)], continued)


@pytest.mark.time_limit(120)
def test_load_state_on_a_live_client_resumes_loss_for_loss(tinker_clients: TinkerClients) -> None:
    # The deprecated way (ART's TinkerNativeBackend still uses it): back to the checkpoint on the
    # live training client, with or without its optimizer state.
    service_client = tinker_clients.service_client()
    original, path, continued = _train_save_continue(service_client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        original.load_state_with_optimizer(path).result()
        reloaded = [sft_step(original, _data(), LR) for _ in range(2)]
        assert _same(reloaded, continued), f"load_state_with_optimizer: {reloaded}, expected {continued}"
        original.load_state(path).result()
        _check_fresh_optimizer([sft_step(original, _data(), LR) for _ in range(2)], continued)


@pytest.mark.time_limit(150)
def test_rest_client_lists_describes_and_deletes_checkpoints(tinker_clients: TinkerClients) -> None:
    service_client = tinker_clients.service_client()
    training_client = ready(service_client.create_lora_training_client(base_model=BASE, rank=8, seed=4))
    run_id = training_client.model_id
    sft_step(training_client, _data(), LR)
    state = training_client.save_state("first-state").result()
    sampler_path = training_client.save_weights_for_sampler("first-sampler").result().path
    assert sampler_path.endswith("/sampler_weights/first-sampler"), sampler_path

    rest = tinker_clients.rest_client()
    run = rest.get_training_run(run_id).result()
    assert run.training_run_id == run_id and run.base_model == BASE and run.is_lora and run.lora_rank == 8, run
    runs = rest.list_training_runs(limit=100).result()
    assert run_id in {r.training_run_id for r in runs.training_runs}

    listed = {c.checkpoint_id: c for c in rest.list_checkpoints(run_id).result().checkpoints}
    assert set(listed) == {"weights/first-state", "sampler_weights/first-sampler"}, listed
    assert listed["weights/first-state"].checkpoint_type == "training"
    assert listed["weights/first-state"].tinker_path == state.path
    assert listed["sampler_weights/first-sampler"].checkpoint_type == "sampler"
    assert listed["sampler_weights/first-sampler"].tinker_path == sampler_path

    info = rest.get_weights_info_by_tinker_path(state.path).result()
    assert info.base_model == BASE and info.is_lora and info.lora_rank == 8, info

    rest.delete_checkpoint(run_id, "weights/first-state").result()
    left = {c.checkpoint_id for c in rest.list_checkpoints(run_id).result().checkpoints}
    assert left == {"sampler_weights/first-sampler"}, left
    refused(lambda: rest.get_weights_info_by_tinker_path(state.path).result(), "weights_info of a deleted checkpoint")
    refused(
        lambda: ready(service_client.create_training_client_from_state(state.path)),
        "a training client from a deleted checkpoint",
    )
    rest.delete_checkpoint_from_tinker_path(sampler_path).result()
    assert rest.list_checkpoints(run_id).result().checkpoints == []
    # The run itself stays, and so does its live training client.
    sft_step(training_client, _data(), LR)
    assert isinstance(rest.get_training_run(run_id).result(), tinker.TrainingRun)
