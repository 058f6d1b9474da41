"""Who may call the trainer and what it takes in, through a real server and client: calls without
the shared secret (or with a wrong one) are UNAUTHENTICATED, Describe included; an oversized
message is RESOURCE_EXHAUSTED; TLS serves with the secret; the CLI refuses a non-loopback address
without a secret and reports the port it bound itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import grpc
import pytest
import torch

from srl_trainer import proto
from srl_trainer.server import MAX_MESSAGE_BYTES, serve

pb, pb_grpc = proto.load()
SECRET = "s3cret-for-the-trainer-tests"
PACKAGE_DIR = Path(__file__).resolve().parent.parent


def bearer(secret: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {secret}")]


@pytest.fixture(scope="module")
def stub() -> Iterator[Any]:
    server, port = serve("127.0.0.1:0", torch.device("cpu"), 1, secret=SECRET)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 64 << 20)])
    yield pb_grpc.TrainerStub(channel)
    channel.close()
    server.stop(0)


def test_calls_without_the_secret_are_unauthenticated(stub: Any) -> None:
    for metadata in ([], bearer("wrong-secret-of-same-size!!!"), bearer(SECRET + "x"), [("authorization", SECRET)]):
        with pytest.raises(grpc.RpcError) as raised:
            stub.Describe(pb.DescribeRequest(), metadata=metadata, timeout=10)
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "trainer secret" in raised.value.details()
    # A streaming call is refused before its input is read or the job lock taken.
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Train(iter([pb.TrainRequest(end=pb.InputEnd())]), timeout=10))
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert not stub.Describe(pb.DescribeRequest(), metadata=bearer(SECRET), timeout=10).busy


def test_an_oversized_message_is_resource_exhausted(stub: Any) -> None:
    big = pb.TrainRequest(file=pb.FileChunk(role=pb.ADAPTER_ROLE_PREVIOUS, format="peft", filename="adapter_model.safetensors", data=b"\0" * (MAX_MESSAGE_BYTES + 1024)))
    spec = pb.TrainRequest(spec=pb.JobSpec(job_id="big", base_model=pb.BaseModel(name="m", gguf_path="/nonexistent.gguf")))
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Train(iter([spec, big, pb.TrainRequest(end=pb.InputEnd())]), metadata=bearer(SECRET), timeout=30))
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    # The trainer is still there and free.
    assert not stub.Describe(pb.DescribeRequest(), metadata=bearer(SECRET), timeout=10).busy


def test_unexpected_input_file_names_are_refused(stub: Any) -> None:
    spec = pb.TrainRequest(spec=pb.JobSpec(job_id="n", base_model=pb.BaseModel(name="m", gguf_path="/nonexistent.gguf")))
    for name in ("..", "../adapter.gguf", "x" * 300):
        chunk = pb.TrainRequest(file=pb.FileChunk(role=pb.ADAPTER_ROLE_PREVIOUS, format="peft", filename=name, data=b"{}"))
        with pytest.raises(grpc.RpcError) as raised:
            list(stub.Train(iter([spec, chunk, pb.TrainRequest(end=pb.InputEnd())]), metadata=bearer(SECRET), timeout=30))
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "input adapter's files are" in raised.value.details()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test certificate")
def test_tls_with_the_secret(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    server, port = serve("127.0.0.1:0", torch.device("cpu"), 1, secret=SECRET, tls=(cert.read_bytes(), key.read_bytes()))
    try:
        channel = grpc.secure_channel(f"localhost:{port}", grpc.ssl_channel_credentials(root_certificates=cert.read_bytes()))
        assert pb_grpc.TrainerStub(channel).Describe(pb.DescribeRequest(), metadata=bearer(SECRET), timeout=10).device == "cpu"
        channel.close()
        plain = grpc.insecure_channel(f"127.0.0.1:{port}")
        with pytest.raises(grpc.RpcError) as raised:
            pb_grpc.TrainerStub(plain).Describe(pb.DescribeRequest(), metadata=bearer(SECRET), timeout=5)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE  # no plaintext beside TLS
        plain.close()
    finally:
        server.stop(0)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k != "TRAINER_SECRET"}
    return subprocess.Popen([sys.executable, "-m", "srl_trainer", *args], cwd=PACKAGE_DIR, env={**environment, "PYTHONPATH": str(PACKAGE_DIR), **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_cli_refuses_a_non_loopback_address_without_a_secret() -> None:
    for address in ("0.0.0.0:0", "[::]:0", "example.org:0"):
        process = cli("--listen", address)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 2 and "not a loopback address" in err
    short = cli("--listen", "127.0.0.1:0", env={"TRAINER_SECRET": "short"})
    _, err = short.communicate(timeout=60)
    assert short.returncode == 2 and "at least 16 characters" in err


def test_cli_binds_port_zero_and_writes_the_port_file(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    process = cli("--listen", "127.0.0.1:0", "--threads", "1", "--port-file", str(port_file), env={"TRAINER_SECRET": SECRET})
    try:
        deadline = time.monotonic() + 120
        while not port_file.exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.1)
        port = int(port_file.read_text())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = pb_grpc.TrainerStub(channel)
        assert stub.Describe(pb.DescribeRequest(), metadata=bearer(SECRET), timeout=30).threads == 1
        with pytest.raises(grpc.RpcError) as raised:
            stub.Describe(pb.DescribeRequest(), timeout=30)
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
        channel.close()
    finally:
        process.terminate()
        process.communicate(timeout=30)
