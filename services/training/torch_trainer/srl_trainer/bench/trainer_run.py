"""One trainer configuration, driven as the worker drives the trainer: a fresh `python -m
srl_trainer` process, the gRPC `Train`
contract with its framing (spec, rows, end), step metrics and the adapter streamed back, Describe
before and after. Fields of Started, StepMetrics and Describe are read by name as they come, so
fields the trainer adds later show up in results.json without a change here. Describe after the
job gives the process's peaks (RSS; on CUDA the allocator's, `peak_device_bytes`).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .configs import Config
from .processes import child_env
from .settings import Settings, make_rows, trained_flags
from .timing import summarize_steps


def _repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf >= 5.28; `label` is gone in 7
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def message_fields(message: Any) -> dict[str, Any]:
    """A protobuf message's set fields by name (maps as dicts, repeated as lists)."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            out[field.name] = dict(value)
        elif _repeated(field):
            out[field.name] = [message_fields(v) if hasattr(v, "ListFields") else v for v in value]
        elif hasattr(value, "ListFields"):
            out[field.name] = message_fields(value)
        else:
            out[field.name] = value
    return out


class TrainerProcess:
    """One configuration's trainer process. Launched early (all of them while the model is built:
    their imports are most of a run's time on a small machine) and idle until its job: an idle
    trainer takes no CPU and has not initialised CUDA, so the process measured at any time is alone
    at work. Each is stopped, and gone, before the next job starts."""

    def __init__(self, name: str, device: str, threads: int, work: Path, log_path: Path) -> None:
        self.port_file = work / f"{name}.port"
        self.port_file.unlink(missing_ok=True)
        self.command = [sys.executable, "-m", "srl_trainer", "--listen", "127.0.0.1:0", "--threads", str(threads), "--port-file", str(self.port_file)]
        if device != "auto":  # auto: the trainer's own choice (cuda when available), as model_files makes it
            self.command += ["--device", device]
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.launched = 0.0

    def launch(self) -> None:
        with open(self.log_path, "wb") as log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=child_env())
        self.launched = time.perf_counter()

    def wait_ready(self, timeout: float) -> int:
        """The port, once the trainer serves (it writes the file after binding)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.port_file.read_text().strip() if self.port_file.exists() else ""
            if text:
                return int(text)
            if self.process.poll() is not None:
                raise RuntimeError(f"the trainer exited ({self.process.returncode}) before serving; see {self.log_path}")
            time.sleep(0.1)
        raise RuntimeError(f"the trainer did not serve within {timeout:.0f} s; see {self.log_path}")

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)  # the trainer stops its server on SIGTERM
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def requests(pb: Any, config: Config, settings: Settings, model: dict[str, Any]) -> Iterator[Any]:
    base = pb.BaseModel(name=f"bench-{model['shape']}", gguf_path=model["gguf"], gguf_size=os.path.getsize(model["gguf"]), source=model["gguf"], train_weights=model["model_dir"])
    spec = pb.JobSpec(
        job_id=f"bench-{config.name}",
        base_model=base,
        lora=pb.LoraConfig(rank=settings.rank, alpha=settings.alpha, seed=settings.lora_seed, target_modules=list(settings.targets)),
        optimizer=pb.OptimizerConfig(weight_decay=0.0, max_grad_norm=1.0, beta1=0.9, beta2=0.99, eps=1e-8),
        steps=[pb.OptimizerStep(rows=list(range(settings.rows)), learning_rate=settings.lr) for _ in range(settings.steps)],
        num_rows=settings.rows,
        resources=pb.ResourceHints(**config.hints(settings)),
        # The GGUF adapter once (llama.cpp names and Q/K layout from the base GGUF's header), PEFT always.
        output_formats=["gguf", "peft"] if config.name == "defaults" else ["peft"],
        sft=pb.SftLoss(),
    )
    yield pb.TrainRequest(spec=spec)
    flags = trained_flags(settings)
    rows = [pb.TokenRow(tokens=row.tolist(), trained=flags, weight=1.0) for row in make_rows(settings)]
    for start in range(0, len(rows), 4):  # several small messages, as the worker frames them
        yield pb.TrainRequest(rows=pb.RowBatch(rows=rows[start : start + 4]))
    yield pb.TrainRequest(end=pb.InputEnd())


def check_adapter(files: dict[tuple[str, str], bytes]) -> dict[str, Any]:
    """What came back: the PEFT tensors finite and trained (B no longer zero), the GGUF readable."""
    info: dict[str, Any] = {"files": {f"{fmt}/{name}": len(data) for (fmt, name), data in files.items()}}
    weights = files.get(("peft", "adapter_model.safetensors"))
    if weights is not None:
        from safetensors.numpy import load

        tensors = load(weights)
        b = [v for k, v in tensors.items() if "lora_B" in k]
        info.update(peft_tensors=len(tensors), finite=bool(all(np.isfinite(v).all() for v in tensors.values())), max_abs_b=float(max(np.abs(v).max() for v in b)) if b else 0.0)
    data = files.get(("gguf", "adapter.gguf"))
    if data is not None:
        import gguf

        with tempfile.NamedTemporaryFile(suffix=".gguf") as tmp:
            tmp.write(data)
            tmp.flush()
            reader = gguf.GGUFReader(tmp.name)
            info.update(gguf_tensors=len(reader.tensors), gguf_finite=bool(all(np.isfinite(np.asarray(t.data)).all() for t in reader.tensors)))
    return info


def _drive(stub: Any, pb: Any, config: Config, settings: Settings, model: dict[str, Any], timeout: float, result: dict[str, Any]) -> None:
    """Fills `result` as the job goes, so that an error part way still leaves its steps."""
    parts: dict[tuple[str, str], list[bytes]] = {}  # joined once at the end: adding each chunk would copy the file per chunk
    metrics: list[dict[str, float]] = []
    marks: list[float] = []
    started_at: float | None = None
    sent = time.perf_counter()
    try:
        for response in stub.Train(requests(pb, config, settings, model), timeout=timeout):
            kind = response.WhichOneof("message")
            now = time.perf_counter()
            if kind == "started":
                started_at = now
                result["started"] = message_fields(response.started)
                result["to_started_s"] = now - sent
            elif kind == "step":
                marks.append(now)
                metrics.append(dict(response.step.metrics))
                since = now - (marks[-2] if len(marks) > 1 else (started_at or sent))
                print(f"  {config.name} step {response.step.step}: loss {metrics[-1].get('loss', math.nan):.5f} {since:.3f} s", file=sys.stderr, flush=True)
            elif kind == "file":
                parts.setdefault((response.file.format, response.file.filename), []).append(response.file.data)
            elif kind == "finished":
                result["trained"] = response.finished.trained
                result["after_last_step_s"] = now - marks[-1] if marks else None  # adapter conversion + streaming
    finally:
        # Client-side step times: from Started (the model loaded) to each step's metrics.
        intervals = [b - a for a, b in zip([started_at, *marks[:-1]], marks)] if started_at is not None else []
        result.update(summarize_steps(intervals, settings.step_tokens))
        result["metrics"] = metrics
        result["losses"] = [m.get("loss") for m in metrics]
        result["grad_norms"] = [m.get("grad_norm") for m in metrics]
        own = [m.get("tokens_per_second", 0.0) for m in metrics]
        result["trainer_steady_tokens_per_s"] = float(np.mean(own[1:] or own)) if own else None
        result["completed"] = len(metrics) == settings.steps
    result["adapter"] = check_adapter({key: b"".join(pieces) for key, pieces in parts.items()})


def run(config: Config, settings: Settings, model: dict[str, Any], server: TrainerProcess, timeout: float) -> dict[str, Any]:
    """The configuration's job on its (launched) trainer process, which is stopped after it."""
    import grpc

    from .. import proto

    pb, pb_grpc = proto.load()
    result: dict[str, Any] = {"config": config.name, "hints": config.hints(settings)}
    try:
        port = server.wait_ready(timeout=min(timeout, 300.0))
        result["ready_after_s"] = time.perf_counter() - server.launched  # since launch, overlapping the model build
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)])
        try:
            stub = pb_grpc.TrainerStub(channel)
            result["describe"] = message_fields(stub.Describe(pb.DescribeRequest(), timeout=60))
            try:
                _drive(stub, pb, config, settings, model, timeout, result)
            except grpc.RpcError as error:
                result["error"] = f"{error.code().name}: {error.details()}"
            if server.process is not None and server.process.poll() is None:
                result["describe_after"] = message_fields(stub.Describe(pb.DescribeRequest(), timeout=60))
        finally:
            channel.close()
    finally:
        server.stop()
    result["peak_rss_bytes"] = result.get("describe_after", {}).get("peak_rss_bytes")
    return result
