"""AdapterCommand through a real gRPC server, on tiny base models: training lowers the loss, FORWARD
is FORWARD_BACKWARD without the gradient, a saved state resumes bit for bit, adapters (and a Train
job) leave each other alone, eviction to disk and base model switches are invisible, the export
loads with the trainer's own readers and PEFT, and every bad input is refused by name."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Iterator

import gguf
import grpc
import numpy as np
import pytest
import torch
from peft import PeftModel

from srl_trainer.lora import gguf_files, peft_files
from srl_trainer.lora.attach import wrapper_of
from srl_trainer.live import state

from .live_helpers import DEVICE, VOCAB, Bases, Served, adam, call, pb, refused, serve, sft_datum, state_files, tiny_llama

DATUM = sft_datum([1, 5, 9, 13, 17, 21, 25, 29, 33, 37], prompt=4)
OTHER = sft_datum([2, 4, 6, 8, 10, 12, 14, 16], prompt=3)
LORA = pb.LoraConfig(rank=4, alpha=8.0, seed=11)
# The same computation twice agrees to float32 rounding on the CPU; with a bf16 base on a GPU, to bf16's.
CLOSE = 1e-6 if DEVICE.type == "cpu" else 2e-2


@pytest.fixture(scope="module")
def bases() -> Iterator[Bases]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Bases(Path(tmp))


@pytest.fixture
def trainer(bases: Bases, tmp_path: Path) -> Iterator[Served]:
    served = serve(bases, capacity=8, spill_root=tmp_path / "spill")
    yield served
    served.close()


def create(served: Served, bases: Bases, adapter_id: str, base: str = "main", lora: Any = LORA) -> Any:
    return call(served.stub, "CREATE", adapter_id, base_model=bases.message(base), lora=lora).result


def train(served: Served, adapter_id: str, datum: Any = DATUM, steps: int = 3, **adam_fields: Any) -> list[float]:
    losses = []
    for _ in range(steps):
        losses.append(call(served.stub, "FORWARD_BACKWARD", adapter_id, [datum], loss_fn="cross_entropy").loss)
        call(served.stub, "OPTIM_STEP", adapter_id, adam=adam(**adam_fields))
    return losses


def params(served: Served, adapter_id: str) -> dict[str, torch.nn.Parameter]:
    registry = served.service.live.registry
    entry = registry.get(adapter_id)
    names, values = registry.parameters(entry, wrapper_of(entry.loaded))
    return dict(zip(names, values))


def test_training_lowers_the_loss_of_the_trained_datum(trainer: Served, bases: Bases) -> None:
    result = create(trainer, bases, "a")
    assert (result.lora.rank, result.lora.alpha, result.lora.seed) == (4, 8.0, 11)
    assert list(result.lora.target_modules) == sorted(["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    assert result.optimizer_steps == 0 and result.load_seconds > 0
    first = call(trainer.stub, "FORWARD_BACKWARD", "a", [DATUM], loss_fn="cross_entropy")
    (out,) = first.outputs
    assert set(out) == {"logprobs", "elementwise_loss"} and len(out["logprobs"]) == len(DATUM.tokens)
    weights = np.array(DATUM.inputs["weights"].values, dtype=np.float32)
    np.testing.assert_array_equal(out["elementwise_loss"], -out["logprobs"] * weights)
    assert first.loss == pytest.approx(float(out["elementwise_loss"].sum()), rel=1e-6)
    assert set(first.result.metrics) == {"loss:sum"} and first.result.load_seconds == 0
    step = call(trainer.stub, "OPTIM_STEP", "a", adam=adam()).result
    assert step.optimizer_steps == 1 and step.metrics["grad_norm"] > 0 and step.metrics["learning_rate"] == pytest.approx(1e-2)
    losses = [first.loss] + train(trainer, "a", steps=4)
    assert all(later < earlier for earlier, later in zip(losses, losses[1:])), losses
    assert losses[-1] < losses[0] - 1.0


def test_forward_is_forward_backward_without_the_gradient(trainer: Served, bases: Bases) -> None:
    create(trainer, bases, "a")
    train(trainer, "a", steps=1)
    forward = call(trainer.stub, "FORWARD", "a", [DATUM, OTHER], loss_fn="cross_entropy")
    assert all(p.grad is None for p in params(trainer, "a").values())  # FORWARD holds no gradient
    backward = call(trainer.stub, "FORWARD_BACKWARD", "a", [DATUM, OTHER], loss_fn="cross_entropy")
    for f, b in zip(forward.outputs, backward.outputs):
        np.testing.assert_allclose(f["logprobs"], b["logprobs"], rtol=0, atol=CLOSE)
        np.testing.assert_allclose(f["elementwise_loss"], b["elementwise_loss"], rtol=0, atol=CLOSE)
    assert forward.loss == pytest.approx(backward.loss, abs=10 * CLOSE)
    # Gradients add up across calls until OPTIM_STEP.
    once = {n: p.grad.clone() for n, p in params(trainer, "a").items()}
    call(trainer.stub, "FORWARD_BACKWARD", "a", [DATUM, OTHER], loss_fn="cross_entropy")
    for n, p in params(trainer, "a").items():
        torch.testing.assert_close(p.grad, 2 * once[n])
    call(trainer.stub, "OPTIM_STEP", "a", adam=adam())
    assert all(p.grad is None for p in params(trainer, "a").values())


def test_a_saved_state_resumes_bit_for_bit(trainer: Served, bases: Bases) -> None:
    hyper = dict(weight_decay=0.1, grad_clip_norm=0.5)
    create(trainer, bases, "straight")
    straight = train(trainer, "straight", steps=5, **hyper)
    create(trainer, bases, "resumed")
    before = train(trainer, "resumed", steps=2, **hyper)
    saved = call(trainer.stub, "SAVE_STATE", "resumed", with_optimizer=True)
    files = state_files(saved)
    assert set(files) == {"adapter_state.json", "adapter_state.safetensors"} and saved.result.optimizer_steps == 2
    config = json.loads(files["adapter_state.json"])
    assert (config["optimizer_steps"], config["optimizer"], config["grads"], config["rank"]) == (2, True, False, 4)
    call(trainer.stub, "CLOSE", "resumed")
    loaded = call(trainer.stub, "LOAD_STATE", "resumed", files=files, base_model=bases.message(), with_optimizer=True).result
    assert loaded.optimizer_steps == 2 and loaded.lora.rank == 4
    after = train(trainer, "resumed", steps=3, **hyper)
    assert before + after == straight  # exactly
    # Without the optimizer the moments start afresh: the same weights, another trajectory.
    call(trainer.stub, "LOAD_STATE", "fresh", files=files, base_model=bases.message())
    assert call(trainer.stub, "FORWARD", "fresh", [DATUM], loss_fn="cross_entropy").loss == straight[2]
    assert call(trainer.stub, "OPTIM_STEP", "fresh", adam=adam()).result.optimizer_steps == 1


def test_interleaved_adapters_do_not_affect_each_other(trainer: Served, bases: Bases) -> None:
    create(trainer, bases, "alone")
    alone = train(trainer, "alone", steps=3)
    create(trainer, bases, "a")
    create(trainer, bases, "b", lora=pb.LoraConfig(rank=2, alpha=4.0, target_modules=["q_proj", "lm_head"]))
    interleaved = []
    for _ in range(3):
        interleaved.append(call(trainer.stub, "FORWARD_BACKWARD", "a", [DATUM], loss_fn="cross_entropy").loss)
        call(trainer.stub, "FORWARD_BACKWARD", "b", [OTHER], loss_fn="cross_entropy")
        call(trainer.stub, "OPTIM_STEP", "b", adam=adam(lr=0.1))
        call(trainer.stub, "OPTIM_STEP", "a", adam=adam())
    assert interleaved == alone


def test_eviction_to_disk_is_invisible(bases: Bases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interleave(served: Served) -> list[float]:
        for name in ("a", "b", "c"):
            create(served, bases, name)
        losses = []
        for step in range(3):
            for name, datum in (("a", DATUM), ("b", OTHER), ("c", DATUM)):
                losses.append(call(served.stub, "FORWARD_BACKWARD", name, [datum], loss_fn="cross_entropy").loss)
            for name in ("c", "a", "b"):  # optimizer steps in another order: gradients held on disk
                call(served.stub, "OPTIM_STEP", name, adam=adam(weight_decay=0.01))
        losses.append(call(served.stub, "FORWARD", "a", [DATUM], loss_fn="cross_entropy").loss)
        return losses

    monkeypatch.setenv("TRAINER_LIVE_ADAPTERS", "1")
    roomy, tight = serve(bases, 8, tmp_path / "roomy"), serve(bases, None, tmp_path / "tight")
    assert tight.service.live.registry.capacity == 1
    try:
        expected = interleave(roomy)
        assert interleave(tight) == expected
        registry = tight.service.live.registry
        assert len(registry.in_memory()) == 1
        on_disk = [e for e in (registry.get(n) for n in "abc") if e.on_disk is not None]
        assert len(on_disk) == 2 and all((e.on_disk / "adapter_state.safetensors").is_file() for e in on_disk)
        call(tight.stub, "CLOSE", "b")
        assert not any(p.name == "live_2" for p in (tmp_path / "tight").rglob("live_*"))
        assert refused(tight.stub, "FORWARD", "b", [DATUM], loss_fn="cross_entropy").code() == grpc.StatusCode.NOT_FOUND
    finally:
        roomy.close()
        tight.close()


def test_adapters_on_two_base_models_take_turns(trainer: Served, bases: Bases, tmp_path: Path) -> None:
    create(trainer, bases, "main")
    create(trainer, bases, "other", base="other")  # loads the other base model: "main" goes to disk
    assert trainer.service.live.registry.get("main").on_disk is not None
    losses = [train(trainer, name, steps=2) for name in ("main", "other", "main")]
    reference = serve(bases, 8, tmp_path / "reference")
    try:
        create(reference, bases, "main")
        assert train(reference, "main", steps=4) == losses[0] + losses[2]
    finally:
        reference.close()


def test_a_train_job_between_commands_leaves_the_live_adapter_alone(bases: Bases, tmp_path: Path) -> None:
    job = [
        pb.TrainRequest(spec=pb.JobSpec(job_id="j", base_model=bases.message(), lora=pb.LoraConfig(rank=4, alpha=8.0), sft=pb.SftLoss(), steps=[pb.OptimizerStep(rows=[0, 1], learning_rate=1e-2)] * 2, num_rows=2, output_formats=["peft"])),
        pb.TrainRequest(rows=pb.RowBatch(rows=[pb.TokenRow(tokens=[3, 7, 11, 15, 19], trained=[False, False, True, True, True]), pb.TokenRow(tokens=[1, 2, 3, 4], trained=[False, True, True, True])])),
        pb.TrainRequest(end=pb.InputEnd()),
    ]

    def run_job(served: Served) -> bytes:
        responses = list(served.stub.Train(iter(job), timeout=60))
        assert responses[-1].finished.trained
        started = responses[0].started  # the settings the trainer chose for this device, in the first message
        assert started.micro_batch_tokens >= 128 and started.gradient_checkpointing in ("auto", "on", "off")
        assert started.activation_bytes_per_token > 0 and "tokens per micro-batch" in started.resources
        return b"".join(r.file.data for r in responses if r.WhichOneof("message") == "file" and r.file.filename == peft_files.WEIGHTS)

    plain, busy = serve(bases, 8, tmp_path / "plain"), serve(bases, 8, tmp_path / "busy")
    try:
        create(plain, bases, "a", lora=pb.LoraConfig(rank=4, alpha=8.0, target_modules=["q_proj", "v_proj", "lm_head"], seed=5))
        expected = train(plain, "a", steps=3)
        alone_job = serve(bases, 8, tmp_path / "alone")
        try:
            job_output = run_job(alone_job)
        finally:
            alone_job.close()

        create(busy, bases, "a", lora=pb.LoraConfig(rank=4, alpha=8.0, target_modules=["q_proj", "v_proj", "lm_head"], seed=5))
        losses = train(busy, "a", steps=1)
        losses.append(call(busy.stub, "FORWARD_BACKWARD", "a", [DATUM], loss_fn="cross_entropy").loss)
        held = {n: (p.detach().clone(), p.grad.clone()) for n, p in params(busy, "a").items()}
        moments = {id(p): {k: v.clone() for k, v in s.items()} for p, s in busy.service.live.registry.get("a").optimizer.state.items()}
        assert run_job(busy) == job_output  # the live adapter does not change the job
        for n, p in params(busy, "a").items():  # nor the job the live adapter
            assert torch.equal(p, held[n][0]) and torch.equal(p.grad, held[n][1]), n
        for p, s in busy.service.live.registry.get("a").optimizer.state.items():
            assert all(torch.equal(v, moments[id(p)][k]) for k, v in s.items())
        call(busy.stub, "OPTIM_STEP", "a", adam=adam())
        losses += train(busy, "a", steps=1)
        assert losses == expected
        assert wrapper_of(busy.service.models.get(busy.service.live.registry.get("a").ref)).peft_config.keys() == {"live_1"}
    finally:
        plain.close()
        busy.close()


def test_export_loads_with_the_trainers_readers_and_peft(trainer: Served, bases: Bases) -> None:
    create(trainer, bases, "a", lora=pb.LoraConfig(rank=4, alpha=8.0, target_modules=["q_proj", "v_proj", "lm_head"]))
    train(trainer, "a", steps=2)
    exported = call(trainer.stub, "EXPORT", "a")
    files = {(fmt, name): data for (role, fmt, name), data in exported.files.items() if role == pb.ADAPTER_ROLE_OUTPUT}
    assert set(files) == {("gguf", "adapter.gguf"), ("peft", peft_files.CONFIG), ("peft", peft_files.WEIGHTS)}
    adapter = peft_files.read({name: data for (fmt, name), data in files.items() if fmt == "peft"})
    assert adapter.targets == {"q_proj", "v_proj", "lm_head"} and adapter.rank == 4 and adapter.alpha == 8.0
    assert np.abs(adapter.pairs["lm_head"][1]).max() > 0  # B of the unembedding trained
    loaded = trainer.service.live.registry.get("a").loaded
    from_gguf = gguf_files.read(files[("gguf", "adapter.gguf")], loaded, sorted(adapter.pairs))
    for module, (a, b) in adapter.pairs.items():
        np.testing.assert_array_equal(from_gguf.pairs[module][0], a)
        np.testing.assert_array_equal(from_gguf.pairs[module][1], b)
    with tempfile.NamedTemporaryFile(suffix=".gguf") as tmp:
        tmp.write(files[("gguf", "adapter.gguf")])
        tmp.flush()
        names = {t.name: tuple(int(d) for d in t.shape) for t in gguf.GGUFReader(tmp.name).tensors}
    assert names["output.weight.lora_a"] == (32, 4) and names["output.weight.lora_b"] == (4, VOCAB)  # llama.cpp's layout of a [64 x 32] projection
    # PEFT itself, on a fresh copy of the base model, computes the log-probs FORWARD returns.
    forward = call(trainer.stub, "FORWARD", "a", [DATUM], loss_fn="cross_entropy").outputs[0]["logprobs"]
    only_peft = call(trainer.stub, "EXPORT", "a", output_formats=["peft"])
    assert {fmt for (_, fmt, _) in only_peft.files} == {"peft"}
    with tempfile.TemporaryDirectory() as tmp:
        for (fmt, name), data in files.items():
            if fmt == "peft":
                Path(tmp, name).write_bytes(data)
        model = PeftModel.from_pretrained(tiny_llama(0), tmp)
        with torch.no_grad():
            logits = model(torch.tensor([list(DATUM.tokens)])).logits[0].float()
    theirs = torch.log_softmax(logits, -1).gather(1, torch.tensor(list(DATUM.target_tokens))[:, None]).squeeze(1)
    np.testing.assert_allclose(forward, theirs.numpy(), atol=1e-5 if DEVICE.type == "cpu" else 0.1)  # GPU: the trainer's base is bf16


def test_lm_head_on_a_tied_embedding_model_is_refused(trainer: Served, bases: Bases) -> None:
    error = refused(trainer.stub, "CREATE", "t", base_model=bases.message("tied"), lora=pb.LoraConfig(target_modules=["q_proj", "lm_head"]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "no output.weight" in error.details() and "train_unembed=false" in error.details()
    assert create(trainer, bases, "t", base="tied").optimizer_steps == 0  # without lm_head it trains


def test_bad_commands_are_refused_by_name_and_leave_the_adapter_as_it_was(trainer: Served, bases: Bases) -> None:
    create(trainer, bases, "a")
    call(trainer.stub, "FORWARD_BACKWARD", "a", [DATUM], loss_fn="cross_entropy")
    held = {n: p.grad.clone() for n, p in params(trainer, "a").items()}
    rl = lambda **inputs: pb.AdapterDatum(tokens=[1, 2, 3], target_tokens=[2, 3, 4], inputs={k: pb.FloatList(values=v) for k, v in inputs.items()})  # noqa: E731
    good = dict(logprobs=[-1.0, -1.0, -1.0], advantages=[0.0, 1.0, 1.0])
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("FORWARD_BACKWARD", dict(datums=[DATUM], loss_fn="sft"), "loss_fn 'sft' is not one of"),
        ("FORWARD_BACKWARD", dict(datums=[rl(**good)], loss_fn="ppo", loss_fn_config={"epsilon": 0.2}), "loss_fn_config.epsilon is not a setting of ppo"),
        ("FORWARD_BACKWARD", dict(datums=[rl(**good)], loss_fn="dro"), "loss_fn_config.beta is required by dro"),
        ("FORWARD_BACKWARD", dict(datums=[rl(advantages=[1.0, 1.0, 1.0])], loss_fn="importance_sampling"), "datum 0: inputs\\['logprobs'\\] is required"),
        ("FORWARD_BACKWARD", dict(datums=[rl(logprobs=[-1.0], advantages=[1.0, 1.0, 1.0])], loss_fn="ppo"), "datum 0: inputs\\['logprobs'\\] has 1 values for 3 tokens"),
        ("FORWARD_BACKWARD", dict(datums=[rl(logprobs=[-1.0, float("nan"), -1.0], advantages=[1.0, 1.0, 1.0])], loss_fn="ppo"), "holds a non-finite value"),
        ("FORWARD_BACKWARD", dict(datums=[pb.AdapterDatum(tokens=[1, 2], target_tokens=[2, VOCAB], inputs={"weights": pb.FloatList(values=[1, 1])})], loss_fn="cross_entropy"), "datum 0: target_tokens holds ids outside the base model's vocabulary \\(0..63\\)"),
        ("FORWARD_BACKWARD", dict(datums=[pb.AdapterDatum(tokens=[1, 2], target_tokens=[2])], loss_fn="cross_entropy"), "datum 0: target_tokens has 1 values for 2 tokens"),
        ("OPTIM_STEP", dict(adam=pb.AdamParams(learning_rate=1e-3)), "adam.eps is out of range"),
        ("EXPORT", dict(output_formats=["onnx"]), "output_formats: 'onnx' is not one of gguf, peft"),
        ("SAVE_STATE", dict(files={"adapter_state.json": b"{}"}), "SAVE_STATE reads no files"),
        ("LOAD_STATE", dict(files={"adapter_state.json": b"{}", "adapter_state.safetensors": b""}, base_model=bases.message()), "unreadable state files|not a live adapter's state"),
        ("CREATE", dict(base_model=bases.message(), lora=pb.LoraConfig(target_modules=["embed_tokens"])), "'embed_tokens' is not a module the trainer adapts"),
    ]
    for kind, fields, message in cases:
        datums, files = fields.pop("datums", []), fields.pop("files", None)
        error = refused(trainer.stub, kind, "b" if kind == "CREATE" else "a", datums, files, **fields)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (kind, error.details())
        assert __import__("re").search(message, error.details()), (message, error.details())
    for n, p in params(trainer, "a").items():
        assert torch.equal(p.grad, held[n]), n
    assert refused(trainer.stub, "FORWARD", "nobody", [DATUM], loss_fn="cross_entropy").code() == grpc.StatusCode.NOT_FOUND
    assert refused(trainer.stub, "CREATE", "a", base_model=bases.message()).code() == grpc.StatusCode.ALREADY_EXISTS
    assert refused(trainer.stub, "CREATE", "c").code() == grpc.StatusCode.INVALID_ARGUMENT  # no base model
    # A state for another shape does not replace the live adapter.
    files = state_files(call(trainer.stub, "SAVE_STATE", "a"))
    error = refused(trainer.stub, "LOAD_STATE", "a", files=files, base_model=bases.message(), lora=pb.LoraConfig(rank=8))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "lora.rank 8 is not the state's 4" in error.details()
    truncated = state.read(files)
    truncated.weights.pop(sorted(truncated.weights)[0])
    assert refused(trainer.stub, "LOAD_STATE", "a", files=state.write(truncated), base_model=bases.message()).code() == grpc.StatusCode.INVALID_ARGUMENT
    for n, p in params(trainer, "a").items():
        assert torch.equal(p.grad, held[n]), n
    # Framing: the datums announced must arrive, and only FORWARD* reads datums.
    announced = iter([pb.AdapterCommandRequest(command=pb.AdapterCommand(kind=pb.ADAPTER_COMMAND_KIND_FORWARD, adapter_id="a", num_datums=2, loss_fn="cross_entropy")), pb.AdapterCommandRequest(datums=pb.AdapterDatumBatch(datums=[DATUM])), pb.AdapterCommandRequest(end=pb.InputEnd())])
    with pytest.raises(grpc.RpcError) as raised:
        list(trainer.stub.AdapterCommand(announced, timeout=30))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "announced 2 datums, 1 arrived" in raised.value.details()
    assert "OPTIM_STEP reads no datums" in refused(trainer.stub, "OPTIM_STEP", "a", [DATUM], adam=adam()).details()


def test_the_memory_budget_and_the_disk_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from srl_trainer.live.registry import capacity_from_env, default_spill_root
    from srl_trainer.server import TrainerService

    monkeypatch.delenv("TRAINER_LIVE_ADAPTERS", raising=False)
    assert capacity_from_env() == 8
    monkeypatch.setenv("TRAINER_LIVE_ADAPTERS", "1")
    monkeypatch.setenv("SRL_CACHE_DIR", str(tmp_path))
    registry = TrainerService(torch.device("cpu"), 1).live.registry
    assert registry.capacity == 1 and registry.spill_root == tmp_path / "trainer-live-adapters" == default_spill_root()
    for bad in ("0", "many"):
        monkeypatch.setenv("TRAINER_LIVE_ADAPTERS", bad)
        with pytest.raises(ValueError, match="TRAINER_LIVE_ADAPTERS must be an integer >= 1"):
            capacity_from_env()


def test_every_loss_through_the_server_matches_its_formula_on_the_returned_logprobs(trainer: Served, bases: Bases) -> None:
    from srl_trainer.tinker_losses import resolve_config, tinker_loss

    create(trainer, bases, "a", lora=pb.LoraConfig(rank=4, alpha=8.0, target_modules=["q_proj", "lm_head"]))
    sampled = [11, 3, 7, 40, 2]
    prompt = 4  # as the cookbook builds RL datums: q = 0, A = 0 (and target 0) on the prompt
    tokens = [5, 6, 7, 8] + sampled[:-1]
    inputs = {
        "logprobs": [0.0] * (prompt - 1) + [-2.0, -1.5, -3.0, -0.5, -2.5],
        "advantages": [0.0] * (prompt - 1) + [0.7] * 5,
        "sequence_ratio_mask": [0.0] * (prompt - 1) + [1.0] * 5,
        "weights": [0.0] * (prompt - 1) + [1.0] * 5,
    }
    targets = [0] * (prompt - 1) + sampled
    configs = {"dro": {"beta": 0.05}, "stable_reinforce": {"kl_coeff": 0.1}, "ppo": {"clip_high_threshold": 1.3}}
    reads = {"cross_entropy": ["weights"], "gspo": ["logprobs", "advantages", "sequence_ratio_mask"]}
    for loss_fn in ("cross_entropy", "importance_sampling", "ppo", "cispo", "dro", "gspo", "stable_reinforce"):
        names = reads.get(loss_fn, ["logprobs", "advantages", "weights"] if loss_fn == "dro" else ["logprobs", "advantages"])
        datum = pb.AdapterDatum(tokens=tokens, target_tokens=targets, inputs={n: pb.FloatList(values=inputs[n]) for n in names})
        reply = call(trainer.stub, "FORWARD_BACKWARD", "a", [datum, datum], loss_fn=loss_fn, loss_fn_config=configs.get(loss_fn, {}))
        assert len(reply.outputs) == 2
        lp = torch.from_numpy(reply.outputs[0]["logprobs"])
        given = {n: torch.tensor(inputs[n], dtype=torch.float32) for n in names}
        expected = tinker_loss(loss_fn, resolve_config(loss_fn, configs.get(loss_fn, {}), {}), lp, given, torch.zeros(len(lp), dtype=torch.long), 1)
        np.testing.assert_allclose(reply.outputs[0]["elementwise_loss"], expected.numpy(), rtol=1e-5, atol=1e-6)
        assert reply.loss == pytest.approx(2 * float(expected.sum()), rel=1e-5, abs=1e-5), loss_fn
    assert call(trainer.stub, "OPTIM_STEP", "a", adam=adam()).result.metrics["grad_norm"] > 0


def test_logprobs_outside_autograd_change_no_gradient(bases: Bases) -> None:
    """forward.scored_logprobs with grad_positions: the positions without a gradient are computed
    apart, the values and the gradient of the others as in one pass."""
    from srl_trainer.forward import scored_logprobs
    from srl_trainer.packing import build_pack

    torch.manual_seed(3)
    model = tiny_llama(0).to(DEVICE)
    for p in model.parameters():
        p.requires_grad_(True)
    tokens = {0: np.array([1, 5, 9, 13, 17, 21], dtype=np.int64), 1: np.array([2, 4, 6], dtype=np.int64)}
    targets = {0: np.array([5, 9, 13, 17, 21, 3]), 1: np.array([4, 6, 8])}
    pack = build_pack([0, 1], tokens, {r: np.ones(len(t), bool) for r, t in tokens.items()}, DEVICE, targets=targets)
    on = torch.tensor([False, False, True, True, False, True, False, True, True], device=DEVICE)
    grads = []
    for mask in (None, on):
        model.zero_grad()
        lp, _ = scored_logprobs(model, pack, 2, False, mask)
        (lp * on).sum().backward()
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
        if mask is None:
            whole = lp.detach()
        else:
            torch.testing.assert_close(lp.detach(), whole)
    assert len(grads[0]) == len(grads[1]) > 0
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)
