"""Adapter files cross the 1 MiB chunking both ways whole and in linear time: Train's and
AdapterCommand's inputs are joined once per file (no timings asserted: a quadratic reassembly of
64 MiB would copy ~2 GiB, which is what the size is for), outputs cut into pieces that rejoin."""

from __future__ import annotations

import numpy as np

from srl_trainer import proto
from srl_trainer.job_input import ROLE_PREVIOUS, ROLE_REFERENCE
from srl_trainer.live import state
from srl_trainer.live.command_input import ROLE_STATE, read_command
from srl_trainer.lora import gguf_files, peft_files
from srl_trainer.lora.output import CHUNK_BYTES, chunks
from srl_trainer.server import file_chunks, read_input

pb, _ = proto.load()


LARGE = 64 << 20  # 64 MiB in 1 MiB chunks


def test_a_large_file_is_chunked_and_reassembled_exactly() -> None:
    data = np.random.default_rng(0).integers(0, 256, LARGE + 12345, dtype=np.uint8).tobytes()
    files = {"adapter_model.safetensors": data, "adapter_config.json": b"{}", "empty": b""}
    pieces = list(chunks(files))
    assert [len(p) for n, p in pieces if n == "adapter_model.safetensors"] == [CHUNK_BYTES] * 64 + [12345]
    assert [p for n, p in pieces if n != "adapter_model.safetensors"] == [b"{}", b""]
    assert all(isinstance(p, bytes) for _, p in pieces)  # what a protobuf bytes field takes
    joined: dict[str, list[bytes]] = {}
    for name, piece in pieces:
        joined.setdefault(name, []).append(piece)
    assert {n: b"".join(p) for n, p in joined.items()} == files


def test_read_input_reassembles_large_files_linearly() -> None:
    """Two adapters' files, interleaved chunk by chunk as a client may send them, come out whole;
    their order within an adapter is the order their first chunks arrived."""
    rng = np.random.default_rng(1)
    gguf_data = rng.integers(0, 256, LARGE, dtype=np.uint8).tobytes()
    weights = rng.integers(0, 256, LARGE // 2 + 7, dtype=np.uint8).tobytes()
    peft = {peft_files.CONFIG: b'{"r": 4}', peft_files.WEIGHTS: weights}
    previous = [pb.FileChunk(role=ROLE_PREVIOUS, format="peft", filename=n, data=d) for n, d in chunks(peft)]
    reference = [pb.FileChunk(role=ROLE_REFERENCE, format="gguf", filename=n, data=d) for n, d in chunks({gguf_files.FILENAME: gguf_data})]
    files = [f for pair in zip(reference, previous) for f in pair] + reference[len(previous) :]
    assert len(files) == 64 + 33 + 1
    requests = [pb.TrainRequest(spec=pb.JobSpec(job_id="j")), *(pb.TrainRequest(file=f) for f in files), pb.TrainRequest(end=pb.InputEnd())]
    job = read_input(iter(requests))
    assert job.adapters[ROLE_REFERENCE].format == "gguf" and job.adapters[ROLE_REFERENCE].files == {gguf_files.FILENAME: gguf_data}
    assert job.adapters[ROLE_PREVIOUS].format == "peft" and job.adapters[ROLE_PREVIOUS].files == peft
    assert list(job.adapters[ROLE_PREVIOUS].files) == [peft_files.CONFIG, peft_files.WEIGHTS]
    assert list(job.adapters) == [ROLE_REFERENCE, ROLE_PREVIOUS]


def test_an_empty_input_file_is_kept_empty() -> None:
    requests = [
        pb.TrainRequest(spec=pb.JobSpec(job_id="j")),
        pb.TrainRequest(file=pb.FileChunk(role=ROLE_PREVIOUS, format="gguf", filename=gguf_files.FILENAME, data=b"")),
        pb.TrainRequest(end=pb.InputEnd()),
    ]
    assert read_input(iter(requests)).adapters[ROLE_PREVIOUS].files == {gguf_files.FILENAME: b""}


def test_output_chunks_are_file_chunk_messages_that_rejoin() -> None:
    files = {"adapter_model.safetensors": bytes(range(256)) * 9000, "adapter_config.json": b"{}"}
    got: dict[str, list[bytes]] = {}
    for message in file_chunks(files, "peft"):
        assert message.format == "peft" and message.role == pb.ADAPTER_ROLE_OUTPUT
        got.setdefault(message.filename, []).append(message.data)
    assert {n: b"".join(p) for n, p in got.items()} == files


def test_a_live_adapters_state_files_are_joined_once_and_whole() -> None:
    data = np.random.default_rng(2).integers(0, 256, LARGE // 2 + 3, dtype=np.uint8).tobytes()
    name = state.FILENAMES[0]
    load = pb.AdapterCommand(kind=pb.ADAPTER_COMMAND_KIND_LOAD_STATE, adapter_id="a")
    requests = [pb.AdapterCommandRequest(command=load)]
    requests += [pb.AdapterCommandRequest(file=pb.FileChunk(role=ROLE_STATE, format=state.FORMAT, filename=n, data=d)) for n, d in chunks({name: data})]
    requests.append(pb.AdapterCommandRequest(end=pb.InputEnd()))
    assert read_command(iter(requests)).files == {name: data}
