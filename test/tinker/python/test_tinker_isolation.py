"""Two entities (alice and bob, each with a key of their own) train at the same time, each in a
thread of their own, and neither can see, train, sample or delete what the other made: every
handle of the other's (model id, tinker:// path, sampler id, run id) is refused as absent, and
RestClient.list_training_runs lists only one's own runs."""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
import tinker
from tinker import types

from conftest import TinkerClients
from tinker_steps import FACT_ANSWER, FACT_PROMPT, greedy, ready, refused, sft_datum, sft_step

BASE = "tiny-chat"
# The clients' constructors (what a pickled client is rebuilt with) take the base model and the
# model's info from SDK 0.38 on.
_SAMPLER_TAKES_BASE = "base_model" in inspect.signature(tinker.SamplingClient.__init__).parameters
_TRAINER_TAKES_INFO = "info" in inspect.signature(tinker.TrainingClient.__init__).parameters


@dataclass
class Made:
    service_client: tinker.ServiceClient
    training_client: tinker.TrainingClient
    sampler: tinker.SamplingClient
    state_path: str
    sampler_path: str
    losses: list[float]


def _train(clients: TinkerClients, user: str) -> Made:
    service_client = clients.service_client(user)
    training_client = ready(service_client.create_lora_training_client(base_model=BASE, rank=8, seed=5))
    data = [sft_datum(FACT_PROMPT, FACT_ANSWER)]
    losses = [sft_step(training_client, data, 1e-2) for _ in range(3)]
    state_path = training_client.save_state(f"{user}-state").result().path
    sampler_path = training_client.save_weights_for_sampler(f"{user}-sampler").result().path
    sampler = ready(service_client.create_sampling_client(model_path=sampler_path))
    greedy(sampler, FACT_PROMPT, 2)
    return Made(service_client, training_client, sampler, state_path, sampler_path, losses)


@pytest.mark.time_limit(180)
def test_two_entities_train_at_once_and_cannot_reach_each_other(tinker_clients: TinkerClients) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {user: pool.submit(_train, tinker_clients, user) for user in ("alice", "bob")}
        made = {user: future.result(timeout=150) for user, future in futures.items()}
    alice, bob = made["alice"], made["bob"]
    # Same seed, same data: the two runs are alike but not shared.
    assert alice.training_client.model_id != bob.training_client.model_id
    assert alice.state_path != bob.state_path and alice.sampler_path != bob.sampler_path
    assert alice.losses[-1] < alice.losses[0] and bob.losses[-1] < bob.losses[0]

    for me, other, user in ((bob, alice, "bob"), (alice, bob, "alice")):
        rest = tinker_clients.rest_client(user)
        run_id = other.training_client.model_id
        own_runs = {r.training_run_id for r in rest.list_training_runs(limit=1000).result().training_runs}
        assert me.training_client.model_id in own_runs
        assert run_id not in own_runs, f"{user} lists the other's run {run_id}"

        refused(lambda: rest.get_training_run(run_id).result(), f"{user}: get_training_run of the other's run")
        refused(lambda: rest.list_checkpoints(run_id).result(), f"{user}: list_checkpoints of the other's run")
        refused(
            lambda: rest.get_weights_info_by_tinker_path(other.state_path).result(),
            f"{user}: weights_info of the other's checkpoint",
        )
        refused(
            lambda: rest.delete_checkpoint_from_tinker_path(other.state_path).result(),
            f"{user}: deleting the other's checkpoint",
        )
        refused(
            lambda: ready(me.service_client.create_training_client_from_state_with_optimizer(other.state_path)),
            f"{user}: a training client from the other's checkpoint",
        )
        refused(
            lambda: ready(me.service_client.create_sampling_client(model_path=other.sampler_path)),
            f"{user}: a sampling client of the other's sampler weights",
        )
        other_sampler_id = other.sampler._sampling_session_id  # noqa: SLF001 - what a pickled client carries
        refused(lambda: rest.get_sampler(other_sampler_id).result(), f"{user}: get_sampler of the other's sampler")
        # The other's handles driven through one's own session, as a stolen id would be.
        holder = me.service_client.holder
        stolen_sampler = tinker.SamplingClient(
            holder, sampling_session_id=other_sampler_id, **({"base_model": BASE} if _SAMPLER_TAKES_BASE else {})
        )
        refused(
            lambda: stolen_sampler.sample(
                types.ModelInput.from_ints(FACT_PROMPT), 1, types.SamplingParams(max_tokens=2, temperature=0.0)
            ).result(),
            f"{user}: sampling with the other's sampler id",
        )
        info = me.training_client.get_info()
        for what in ("forward", "optim_step", "save_state"):
            stolen = tinker.TrainingClient(
                holder, model_seq_id=99, model_id=run_id, **({"info": info} if _TRAINER_TAKES_INFO else {})
            )
            call = {
                "forward": lambda: stolen.forward([sft_datum(FACT_PROMPT, FACT_ANSWER)], "cross_entropy").result(),
                "optim_step": lambda: stolen.optim_step(types.AdamParams(learning_rate=1e-2)).result(),
                "save_state": lambda: stolen.save_state("stolen").result(),
            }[what]
            refused(call, f"{user}: {what} on the other's model id")

    # Nothing of either was touched: both still list their checkpoints and sample as before.
    for user, mine in made.items():
        ids = {c.checkpoint_id for c in tinker_clients.rest_client(user).list_checkpoints(mine.training_client.model_id).result().checkpoints}
        assert ids == {f"weights/{user}-state", f"sampler_weights/{user}-sampler"}, (user, ids)
        sft_step(mine.training_client, [sft_datum(FACT_PROMPT, FACT_ANSWER)], 1e-2)
