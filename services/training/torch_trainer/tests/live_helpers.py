"""Helpers of the live adapter tests: tiny base models behind real GGUF headers (the model cache
reads the header, `_load` builds the tiny model), a trainer served on loopback, and a client for
AdapterCommand calls. TRAINER_TEST_DEVICE=cuda runs them on a GPU (bf16 base, autocast) instead."""

from __future__ import annotations

from concurrent import futures
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import gguf
import grpc
import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedModel

from srl_trainer import proto
from srl_trainer.architectures import gguf_tensor_namer
from srl_trainer.base_models import ModelCache
from srl_trainer.live.commands import LiveCommands
from srl_trainer.live.registry import Registry
from srl_trainer.server import TrainerService

pb, pb_grpc = proto.load()
K = pb.AdapterCommandKind
VOCAB = 64
DEVICE = torch.device(os.environ.get("TRAINER_TEST_DEVICE", "cpu"))


def tiny_llama(seed: int, tied: bool = False) -> PreTrainedModel:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=tied)
    return LlamaForCausalLM(config)


def write_base_gguf(path: Path, model: PreTrainedModel) -> None:
    """A "llama" GGUF with the model's header facts and its weight matrices (output.weight only when
    the model does not tie it to the embedding, as llama.cpp's converter writes them)."""
    config = model.config
    namer = gguf_tensor_namer("llama", config.num_hidden_layers)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(config.num_hidden_layers)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_tensor("token_embd.weight", model.get_input_embeddings().weight.detach().numpy())
    if not config.tie_word_embeddings:
        writer.add_tensor("output.weight", model.get_output_embeddings().weight.detach().numpy())
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
            writer.add_tensor(f"{namer(name)}.weight", module.weight.detach().numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


class TinyModels(ModelCache):
    """The real model cache, whose `_load` builds the tiny model registered for a GGUF path."""

    def __init__(self, models: dict[str, tuple[int, bool]]) -> None:
        super().__init__(DEVICE)
        self.models = models  # path -> (seed, tied)
        self.loads = 0

    def _load(self, gguf_path: str, train_weights: str) -> PreTrainedModel:
        self.loads += 1
        seed, tied = self.models[gguf_path]
        return tiny_llama(seed, tied).to(self.device, self.dtype())  # as from_pretrained(dtype=...).to(device)


@dataclass
class Bases:
    """Base GGUFs in a directory: "main" (seed 0), "other" (seed 1), "tied" (seed 2, tied)."""

    root: Path
    paths: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, seed, tied in (("main", 0, False), ("other", 1, False), ("tied", 2, True)):
            path = self.root / f"{name}.gguf"
            write_base_gguf(path, tiny_llama(seed, tied))
            self.paths[name] = str(path)

    def models(self) -> TinyModels:
        return TinyModels({self.paths[n]: (seed, n == "tied") for n, seed in (("main", 0), ("other", 1), ("tied", 2))})

    def message(self, name: str = "main") -> Any:
        return pb.BaseModel(name=f"tiny-{name}", gguf_path=self.paths[name], source=self.paths[name])


@dataclass
class Served:
    service: TrainerService
    stub: Any
    server: grpc.Server
    channel: grpc.Channel

    def close(self) -> None:
        self.channel.close()
        self.server.stop(0)


def serve(bases: Bases, capacity: int | None, spill_root: Path) -> Served:
    """A trainer on the tiny models; `capacity` None: TRAINER_LIVE_ADAPTERS's."""
    service = TrainerService(DEVICE, 1)
    service.models = bases.models()
    service.live = LiveCommands(Registry(service.models, capacity or service.live.registry.capacity, spill_root))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_TrainerServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    return Served(service, pb_grpc.TrainerStub(channel), server, channel)


@dataclass
class Reply:
    outputs: list[dict[str, np.ndarray]]
    files: dict[tuple[int, str, str], bytes]  # (role, format, filename) -> data
    result: Any

    @property
    def loss(self) -> float:
        return self.result.metrics["loss:sum"]


def sft_datum(sequence: list[int], prompt: int) -> Any:
    """Tinker's SFT datum: the sequence shifted by one, weight 1 on the completion's targets."""
    weights = [0.0] * (prompt - 1) + [1.0] * (len(sequence) - prompt)
    return pb.AdapterDatum(tokens=sequence[:-1], target_tokens=sequence[1:], inputs={"weights": pb.FloatList(values=weights)})


def requests(kind: str, adapter_id: str, datums: list[Any] = (), files: dict[str, bytes] | None = None, **fields: Any) -> Iterator[Any]:
    yield pb.AdapterCommandRequest(command=pb.AdapterCommand(kind=K.Value(f"ADAPTER_COMMAND_KIND_{kind}"), adapter_id=adapter_id, num_datums=len(datums), **fields))
    for name, data in (files or {}).items():
        yield pb.AdapterCommandRequest(file=pb.FileChunk(role=pb.ADAPTER_ROLE_STATE, format="state", filename=name, data=data))
    if datums:
        yield pb.AdapterCommandRequest(datums=pb.AdapterDatumBatch(datums=list(datums)))
    yield pb.AdapterCommandRequest(end=pb.InputEnd())


def call(stub: Any, kind: str, adapter_id: str, datums: list[Any] = (), files: dict[str, bytes] | None = None, **fields: Any) -> Reply:
    reply = Reply([], {}, None)
    for response in stub.AdapterCommand(requests(kind, adapter_id, datums, files, **fields), timeout=60):
        part = response.WhichOneof("message")
        if part == "outputs":
            reply.outputs += [{k: np.array(v.values, dtype=np.float32) for k, v in o.outputs.items()} for o in response.outputs.outputs]
        elif part == "file":
            key = (response.file.role, response.file.format, response.file.filename)
            reply.files[key] = reply.files.get(key, b"") + response.file.data
        else:
            reply.result = response.result
    return reply


def refused(stub: Any, kind: str, adapter_id: str, datums: list[Any] = (), files: dict[str, bytes] | None = None, **fields: Any) -> grpc.RpcError:
    try:
        call(stub, kind, adapter_id, datums, files, **fields)
    except grpc.RpcError as error:
        return error
    raise AssertionError(f"{kind} of {adapter_id} was not refused")


def adam(lr: float = 1e-2, **fields: Any) -> Any:
    return pb.AdamParams(learning_rate=lr, beta1=0.9, beta2=0.95, eps=1e-12, **fields)


def state_files(reply: Reply) -> dict[str, bytes]:
    return {name: data for (role, fmt, name), data in reply.files.items() if role == pb.ADAPTER_ROLE_STATE and fmt == "state"}
