"""ConvertAdapter: the PEFT files the trainer wrote for an adapter convert, from the base model's
GGUF header alone, into the very GGUF the trainer wrote; adapters that do not fit the base model
are refused as INVALID_ARGUMENT through a real server, which answers while a job holds its lock."""

from __future__ import annotations

import tempfile
from concurrent import futures
from pathlib import Path
from typing import Any, Iterator

import gguf
import grpc
import numpy as np
import pytest
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from srl_trainer import proto
from srl_trainer.architectures import gguf_tensor_namer
from srl_trainer.base_models import LoadedModel, inspect_gguf
from srl_trainer.errors import InputError
from srl_trainer.gguf_meta import read_meta
from srl_trainer.lora import attach, fit, gguf_files, peft_files
from srl_trainer.server import TrainerService

from .test_adapters import tiny, trained_adapter

pb, pb_grpc = proto.load()


def write_base_gguf(loaded: LoadedModel, path: Path) -> None:
    """A base GGUF with the tiny model's projections and the header facts a conversion reads."""
    facts = loaded.facts
    namer = gguf_tensor_namer(facts.architecture, facts.n_blocks)
    writer = gguf.GGUFWriter(str(path), facts.architecture)
    writer.add_block_count(facts.n_blocks)
    writer.add_head_count(facts.n_head)
    writer.add_head_count_kv(facts.n_head_kv)
    writer.add_context_length(facts.context_length)
    writer.add_token_list([f"t{i}" for i in range(64)])  # arrays, which the header reader skips
    writer.add_token_scores([0.0] * 64)
    for name, module in loaded.model.named_modules():
        if name.rsplit(".", 1)[-1] in loaded.arch.default_targets:
            writer.add_tensor(f"{namer(name)}.weight", module.weight.detach().numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def gguf_tensors(data: bytes) -> dict[str, np.ndarray]:
    with tempfile.NamedTemporaryFile(suffix=".gguf") as tmp:
        tmp.write(data)
        tmp.flush()
        return {t.name: np.array(t.data) for t in gguf.GGUFReader(tmp.name).tensors}


def trainer_output(kind: str) -> tuple[LoadedModel, dict[str, bytes], bytes]:
    """An adapter as a training job returns it: its PEFT files and its GGUF."""
    loaded = tiny(kind)
    model, adapter = trained_adapter(loaded)
    attach.detach(model)
    return loaded, peft_files.write(adapter, "tiny"), gguf_files.write(adapter, loaded, "tiny-lora")


def with_tensor(peft: dict[str, bytes], key: str, value: torch.Tensor) -> dict[str, bytes]:
    tensors = dict(load_safetensors(peft[peft_files.WEIGHTS]))
    tensors[key] = value
    return {**peft, peft_files.WEIGHTS: save_safetensors(tensors)}


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_the_trainers_peft_files_convert_to_the_trainers_gguf(kind: str, tmp_path: Path) -> None:
    loaded, peft, written = trainer_output(kind)
    write_base_gguf(loaded, tmp_path / "base.gguf")
    base = fit.read_base(str(tmp_path / "base.gguf"))
    assert (base.facts.architecture, base.facts.n_head, base.facts.n_head_kv, base.facts.n_blocks) == (kind, 4, 2, 2)
    adapter = peft_files.read(peft)
    fit.check_fits(adapter, base)
    converted = gguf_files.write(adapter, base, "tiny-lora")
    ours, theirs = gguf_tensors(converted), gguf_tensors(written)
    assert sorted(ours) == sorted(theirs) and len(ours) == 2 * 7 * 2
    for name in theirs:
        np.testing.assert_array_equal(ours[name], theirs[name])  # q/k permuted alike for llama
    assert converted == written
    assert peft_files.write(adapter, "tiny") == peft


def test_header_reader_agrees_with_gguf_py(tmp_path: Path) -> None:
    loaded = tiny("llama")
    write_base_gguf(loaded, tmp_path / "base.gguf")
    meta = read_meta(str(tmp_path / "base.gguf"))
    reader = gguf.GGUFReader(str(tmp_path / "base.gguf"))
    assert {t.name: (tuple(int(d) for d in t.shape), t.tensor_type.name) for t in reader.tensors} == {n: (t.shape, t.type_name) for n, t in meta.tensors.items()}
    scalars = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.") and not isinstance(f.contents(), list)}
    assert meta.fields == scalars and "tokenizer.ggml.tokens" not in meta.fields
    assert inspect_gguf(str(tmp_path / "base.gguf")).n_head_kv == 2


def test_adapters_that_do_not_fit_are_input_errors(tmp_path: Path) -> None:
    loaded, peft, _ = trainer_output("llama")
    write_base_gguf(loaded, tmp_path / "base.gguf")
    base = fit.read_base(str(tmp_path / "base.gguf"))
    prefix = "base_model.model.model.layers"
    layer_5 = with_tensor(peft, f"{prefix}.5.mlp.up_proj.lora_A.weight", torch.zeros(4, 32))  # the base has 2 blocks
    cases = {
        "maps 32 -> 32 features, the base model's blk.0.ffn_down.weight 48 -> 32": with_tensor(peft, f"{prefix}.0.mlp.down_proj.lora_A.weight", torch.zeros(4, 32)),
        "has no tensor for it": with_tensor(layer_5, f"{prefix}.5.mlp.up_proj.lora_B.weight", torch.zeros(48, 4)),
        "has lora_A but no lora_B": layer_5,
        "not supported for llama": with_tensor(with_tensor(peft, "base_model.model.lm_head.lora_A.weight", torch.zeros(4, 32)), "base_model.model.lm_head.lora_B.weight", torch.zeros(64, 4)),
        "not LoRA A/B weights": with_tensor(peft, f"{prefix}.0.mlp.up_proj.lora_magnitude_vector", torch.zeros(48)),
        "not a rank-4 LoRA pair": with_tensor(peft, f"{prefix}.0.mlp.up_proj.lora_A.weight", torch.zeros(2, 32)),
    }
    for message, files in cases.items():
        with pytest.raises(InputError, match=message):
            fit.check_fits(peft_files.read(files), base)
    for config, message in ((b'{"r": 4, "lora_alpha": 8, "use_dora": true}', "DoRA"), (b'{"r": 4}', "lora_alpha must be a number"), (b'{"peft_type": "IA3", "r": 4}', "not LORA"),
                            (b'{"r": 1e309, "lora_alpha": 8}', "r must be an integer"), (b'{"r": 4.5, "lora_alpha": 8}', "r must be an integer"),
                            (b'{"r": 4, "lora_alpha": NaN}', "lora_alpha must be a number"), (b'{"r": 4096, "lora_alpha": 8}', "r must be an integer from 1 to 1024")):
        with pytest.raises(InputError, match=message):
            peft_files.read({**peft, peft_files.CONFIG: config})
    # Half precision (bf16 as many adapters are saved) reads as float32.
    half = {k: v.to(torch.bfloat16) for k, v in load_safetensors(peft[peft_files.WEIGHTS]).items()}
    adapter = peft_files.read({**peft, peft_files.WEIGHTS: save_safetensors(half)})
    assert all(a.dtype == np.float32 and b.dtype == np.float32 for a, b in adapter.pairs.values())


# --- through the gRPC server --------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Any, TrainerService]]:
    service = TrainerService(torch.device("cpu"), 1)
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_TrainerServicer_to_server(service, grpc_server)
    port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield pb_grpc.TrainerStub(channel), service
    channel.close()
    grpc_server.stop(0)


def convert_requests(path: Path, files: dict[str, bytes], formats: tuple[str, ...] = ()) -> list[Any]:
    base_model = pb.BaseModel(name="tiny", gguf_path=str(path), source=str(path))
    chunks = [pb.TrainRequest(file=pb.FileChunk(role=pb.ADAPTER_ROLE_INITIAL, format="peft", filename=n, data=d)) for n, d in files.items()]
    return [pb.TrainRequest(spec=pb.JobSpec(job_id="c", base_model=base_model, output_formats=list(formats))), *chunks, pb.TrainRequest(end=pb.InputEnd())]


def refused(stub: Any, requests: list[Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.ConvertAdapter(iter(requests), timeout=30))
    return raised.value


def test_convert_through_the_server_while_a_job_holds_the_lock(server: tuple[Any, TrainerService], tmp_path: Path) -> None:
    stub, service = server
    loaded, peft, written = trainer_output("llama")
    write_base_gguf(loaded, tmp_path / "base.gguf")
    with service.busy:  # as during a training job: Train is refused, ConvertAdapter answers
        busy = pb.TrainRequest(spec=pb.JobSpec(job_id="t", base_model=pb.BaseModel(name="tiny", gguf_path=str(tmp_path / "base.gguf"))))
        with pytest.raises(grpc.RpcError) as raised:
            list(stub.Train(iter([busy, pb.TrainRequest(end=pb.InputEnd())]), timeout=30))
        assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        responses = list(stub.ConvertAdapter(iter(convert_requests(tmp_path / "base.gguf", peft)), timeout=30))
    files: dict[tuple[str, str], bytes] = {}
    for r in responses[:-1]:
        assert r.file.role == pb.ADAPTER_ROLE_OUTPUT
        files[(r.file.format, r.file.filename)] = files.get((r.file.format, r.file.filename), b"") + r.file.data
    assert responses[-1].WhichOneof("message") == "finished" and not responses[-1].finished.trained
    assert set(files) == {("gguf", gguf_files.FILENAME), ("peft", peft_files.CONFIG), ("peft", peft_files.WEIGHTS)}
    assert files[("gguf", gguf_files.FILENAME)] == written
    assert files[("peft", peft_files.WEIGHTS)] == peft[peft_files.WEIGHTS]
    only_gguf = list(stub.ConvertAdapter(iter(convert_requests(tmp_path / "base.gguf", peft, ("gguf",))), timeout=30))
    assert {r.file.format for r in only_gguf[:-1]} == {"gguf"}


def test_bad_adapters_are_invalid_argument_through_the_server(server: tuple[Any, TrainerService], tmp_path: Path) -> None:
    stub, _ = server
    loaded, peft, _ = trainer_output("llama")
    write_base_gguf(loaded, tmp_path / "base.gguf")
    mismatched = with_tensor(peft, "base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight", torch.zeros(32, 4))
    error = refused(stub, convert_requests(tmp_path / "base.gguf", mismatched))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "k_proj: the adapter maps 32 -> 32 features, the base model's blk.1.attn_k.weight 32 -> 16" in error.details()
    error = refused(stub, convert_requests(tmp_path / "base.gguf", {peft_files.CONFIG: peft[peft_files.CONFIG]}))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "missing adapter_model.safetensors" in error.details()
    previous = [r if r.WhichOneof("message") != "file" else pb.TrainRequest(file=pb.FileChunk(role=pb.ADAPTER_ROLE_PREVIOUS, format="peft", filename=r.file.filename, data=r.file.data)) for r in convert_requests(tmp_path / "base.gguf", peft)]
    assert "INITIAL" in refused(stub, previous).details()
    error = refused(stub, convert_requests(tmp_path / "missing.gguf", peft))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "not reachable" in error.details()
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf at all")
    error = refused(stub, convert_requests(tmp_path / "junk.gguf", peft))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "cannot read the base model's GGUF" in error.details()
