"""The gRPC contract's framing and errors, through a real server and client: a malformed input
stream is INVALID_ARGUMENT, an unreachable base model FAILED_PRECONDITION, and Describe says what
this trainer is."""

from __future__ import annotations

from typing import Any, Iterator

import grpc
import pytest
import torch

from srl_trainer import proto
from srl_trainer.server import serve

pb, pb_grpc = proto.load()


@pytest.fixture(scope="module")
def stub() -> Iterator[Any]:
    server, port = serve("127.0.0.1:0", torch.device("cpu"), 1)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield pb_grpc.TrainerStub(channel)
    channel.close()
    server.stop(0)


def call(stub: Any, messages: list[Any]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Train(iter(messages), timeout=30))
    return raised.value


def spec(**fields: Any) -> Any:
    return pb.TrainRequest(spec=pb.JobSpec(job_id="t", base_model=pb.BaseModel(name="m", gguf_path="/nonexistent.gguf", source="/nonexistent.gguf"), **fields))


def test_describe(stub: Any) -> None:
    info = stub.Describe(pb.DescribeRequest())
    assert info.device == "cpu" and info.threads == 1 and not info.busy
    assert set(info.architectures) == {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"}
    assert info.peak_rss_bytes > 0 and info.versions["torch"]


def test_input_framing_errors(stub: Any) -> None:
    row = pb.TrainRequest(rows=pb.RowBatch(rows=[pb.TokenRow(tokens=[1, 2], trained=[False, True])]))
    end = pb.TrainRequest(end=pb.InputEnd())
    assert call(stub, [row, end]).code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "first message must be `spec`" in call(stub, [row, end]).details()
    assert call(stub, [spec(num_rows=2), row, end]).code() == grpc.StatusCode.INVALID_ARGUMENT
    assert call(stub, [spec(num_rows=1), spec(num_rows=1), end]).code() == grpc.StatusCode.INVALID_ARGUMENT
    bad = pb.TrainRequest(rows=pb.RowBatch(rows=[pb.TokenRow(tokens=[1, 2], trained=[True])]))
    assert "trained flags" in call(stub, [spec(num_rows=1), bad, end]).details()
    assert call(stub, [spec(num_rows=1), row]).code() == grpc.StatusCode.CANCELLED  # no `end`


def test_unreachable_base_model_is_failed_precondition(stub: Any) -> None:
    row = pb.TrainRequest(rows=pb.RowBatch(rows=[pb.TokenRow(tokens=[1, 2], trained=[False, True])]))
    error = call(stub, [spec(num_rows=1), row, pb.TrainRequest(end=pb.InputEnd())])
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "not reachable from this trainer" in error.details()
    inspected = stub.InspectBaseModel(pb.InspectBaseModelRequest(base_model=pb.BaseModel(name="m", gguf_path="/nonexistent.gguf")))
    assert not inspected.trainable and "not reachable" in inspected.reason
