"""The gRPC service (proto/srl/trainer/v1/trainer.proto): framing of the input stream, one job at
a time (adapter conversion beside it), progress and adapter files streamed back, live adapters'
commands (live/), errors mapped to statuses.

Two locks: `busy` is held by a job (Train, Score: a second one is refused, RESOURCE_EXHAUSTED), and
`compute` by whatever uses the loaded model (a job or an adapter command), which waits for it: a
command waits for the job before it, a job for the command in progress."""

from __future__ import annotations

import contextlib
import logging
import resource
import threading
from concurrent import futures
from typing import Any, Iterator

import grpc
import torch

from . import proto
from .auth import SecretInterceptor
from .architectures import SUPPORTED
from .base_models import ModelCache, inspect_gguf, model_ref, resolve_gguf, why_not_trainable
from .errors import AlreadyExistsError, CancelledError, InputError, NotFoundError, UnsupportedModelError
from .job import Trainer
from .lora import gguf_files, peft_files
from .lora.output import chunks, output_files
from .lora.adapter import Adapter
from .lora.attach import attach_for_job, base_only, detach
from .lora.fit import check_fits, read_base
from .job_input import ROLE_INITIAL, ROLE_OUTPUT, ROLE_PREVIOUS, ROLE_REFERENCE, AdapterInput, JobInput, row_from_message
from .live.command_input import read_command
from .live.commands import LiveCommands
from .live.registry import Registry, capacity_from_env, default_spill_root
from .resources import plan, without_gradients
from .versions import versions

pb, pb_grpc = proto.load()
log = logging.getLogger("srl_trainer")
# Largest message received or sent (gRPC refuses a bigger one with RESOURCE_EXHAUSTED before it is
# held in memory). Clients send adapters in 1 MiB chunks and rows in batches of ~64k tokens, and
# Score answers in batches of at most SCORE_BATCH_FLOATS values: 8 MiB leaves room for a single
# row of a 128k-token context (~10 bytes a token) and nothing much more. The TypeScript client
# (engine/trainer-client.ts) sets the same limit.
MAX_MESSAGE_BYTES = 8 << 20
SCORE_BATCH_FLOATS = 1 << 18
# The only input files an adapter can have: anything else is refused before it is kept.
INPUT_FILENAMES = {"gguf": ("adapter.gguf",), "peft": ("adapter_config.json", "adapter_model.safetensors")}


def read_input(requests: Iterator[Any], roles: tuple[int, ...] = (ROLE_PREVIOUS, ROLE_REFERENCE)) -> JobInput:
    """spec, file chunks (of adapters in `roles`), row batches, end: in that order. A file's chunks
    are joined once, at the end (adding each to the bytes so far would copy the file per chunk)."""
    job: JobInput | None = None
    ended = False
    parts: dict[tuple[int, str], list[bytes]] = {}
    for request in requests:
        kind = request.WhichOneof("message")
        if ended:
            raise InputError("messages after `end`")
        if kind == "spec":
            if job is not None:
                raise InputError("a second `spec`")
            job = JobInput(spec=request.spec)
            continue
        if job is None:
            raise InputError("the first message must be `spec`")
        if kind == "file":
            chunk = request.file
            if chunk.role not in roles:
                raise InputError(f"input files must be {' or '.join(pb.AdapterRole.Name(r).removeprefix('ADAPTER_ROLE_') for r in roles)} adapters")
            if chunk.filename not in INPUT_FILENAMES.get(chunk.format, ()):
                raise InputError(f"an input adapter's files are {', '.join(n for names in INPUT_FILENAMES.values() for n in names)} (format gguf or peft); got {chunk.format!r}/{chunk.filename[:80]!r}")
            adapter = job.adapters.setdefault(chunk.role, AdapterInput(format=chunk.format))
            if adapter.format != chunk.format:
                raise InputError("an input adapter's files must share one format")
            parts.setdefault((chunk.role, chunk.filename), []).append(chunk.data)
        elif kind == "rows":
            for row in request.rows.rows:
                job.rows.append(row_from_message(row, len(job.rows)))
        elif kind == "end":
            ended = True
        else:
            raise InputError(f"unexpected message {kind!r}")
    if job is None or not ended:
        raise CancelledError("the input stream ended before `end`")
    for (role, filename), pieces in parts.items():
        job.adapters[role].files[filename] = b"".join(pieces)
    if len(job.rows) != job.spec.num_rows:
        raise InputError(f"the spec announced {job.spec.num_rows} rows, {len(job.rows)} arrived")
    return job


def adapter_responses(adapter: Adapter, base: gguf_files.GgufBase, spec: Any) -> Iterator[Any]:
    """The adapter as `file` responses in the spec's output formats (empty: both)."""
    for fmt, files in output_files(adapter, base, spec.base_model, list(spec.output_formats)):
        for chunk in file_chunks(files, fmt):
            yield pb.TrainResponse(file=chunk)


def file_chunks(files: dict[str, bytes], fmt: str) -> Iterator[Any]:
    for name, data in chunks(files):
        yield pb.FileChunk(role=ROLE_OUTPUT, format=fmt, filename=name, data=data)


class TrainerService(pb_grpc.TrainerServicer):
    def __init__(self, device: torch.device, threads: int) -> None:
        self.device = device
        self.threads = threads
        self.models = ModelCache(device)
        self.busy = threading.Lock()
        self.compute = threading.Lock()
        self.live = LiveCommands(Registry(self.models, capacity_from_env(), default_spill_root()))

    def Describe(self, request: Any, context: grpc.ServicerContext) -> Any:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        device_peak = torch.cuda.max_memory_allocated(self.device) if self.device.type == "cuda" else 0
        return pb.DescribeResponse(versions=versions(), device=str(self.device), threads=self.threads, architectures=sorted(SUPPORTED), busy=self.busy.locked(), peak_rss_bytes=peak, peak_device_bytes=device_peak)

    def InspectBaseModel(self, request: Any, context: grpc.ServicerContext) -> Any:
        ref = model_ref(request.base_model)
        try:
            facts = inspect_gguf(resolve_gguf(ref))
        except UnsupportedModelError as error:
            return pb.InspectBaseModelResponse(trainable=False, reason=str(error))
        except Exception as error:  # an unreadable file is a fact about the model, not a failure of this call
            return pb.InspectBaseModelResponse(trainable=False, reason=f"unreadable GGUF: {error}")
        reason = why_not_trainable(facts)
        return pb.InspectBaseModelResponse(
            trainable=reason is None,
            reason=reason or "",
            architecture=facts.architecture,
            tensor_types=list(facts.tensor_types),
            quantized=facts.quantized,
            context_length=facts.context_length,
        )

    def Train(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        with self._exclusive(context):
            cancelled = self._cancel_event(context)
            job: JobInput | None = None
            try:
                job = read_input(requests)
                with self._model_in_use(context):
                    yield from self._train(job, cancelled)
            except Exception as error:
                self._abort(context, error, job_id=job.spec.job_id if job else None)

    def _train(self, job: JobInput, cancelled: threading.Event) -> Iterator[Any]:
        spec = job.spec
        loaded = self.models.get(model_ref(spec.base_model))
        model = attach_for_job(loaded, job)
        try:
            resources = plan(spec.resources, loaded, model, autocast=self.device.type == "cuda")
            trainer = Trainer(loaded, job, resources, cancelled)
            yield pb.TrainResponse(
                started=pb.Started(
                    num_steps=len(spec.steps),
                    device=str(self.device),
                    threads=self.threads,
                    load_seconds=loaded.load_seconds,
                    micro_batch_tokens=resources.micro_batch_tokens,
                    gradient_checkpointing=resources.gradient_checkpointing,
                    activation_budget_bytes=int(min(resources.activation_budget_bytes, 2**63 - 1)),
                    activation_bytes_per_token=resources.bytes_per_token,
                    resources=resources.reason,
                )
            )
            log.info("job %s: %d steps, %d rows on %s; %s", spec.job_id, len(spec.steps), len(job.rows), spec.base_model.name, resources.reason)
            steps = trainer.run(model)
            while True:
                try:
                    step, metrics = next(steps)
                except StopIteration as stop:
                    result = stop.value
                    break
                yield pb.TrainResponse(step=pb.StepMetrics(step=step, metrics=metrics))
        finally:
            detach(model)
        yield from adapter_responses(result.adapter, loaded, spec)
        yield pb.TrainResponse(finished=pb.Finished(trained=result.trained))

    def ConvertAdapter(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        # No exclusive lock: it reads the base model's header only, so it answers beside a job.
        try:
            job = read_input(requests, roles=(ROLE_INITIAL,))
            yield from self._convert(job)
        except Exception as error:
            self._abort(context, error, job_id="convert")

    def _convert(self, job: JobInput) -> Iterator[Any]:
        given = job.adapters.get(ROLE_INITIAL)
        if given is None or given.format != "peft":
            raise InputError("send the adapter as `file` chunks of role INITIAL in format peft")
        adapter = peft_files.read(given.files)
        ref = model_ref(job.spec.base_model)
        base = read_base(resolve_gguf(ref))
        check_fits(adapter, base)
        log.info("converted a PEFT adapter (rank %d, %d modules) for %s", adapter.rank, len(adapter.pairs), ref.name)
        yield from adapter_responses(adapter, base, job.spec)
        yield pb.TrainResponse(finished=pb.Finished(trained=False))

    def Score(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        with self._exclusive(context):
            cancelled = self._cancel_event(context)
            try:
                job = read_input(requests)
                with self._model_in_use(context):
                    yield from self._score(job, cancelled)
            except Exception as error:
                self._abort(context, error, job_id="score")

    def _score(self, job: JobInput, cancelled: threading.Event) -> Iterator[Any]:
        loaded = self.models.get(model_ref(job.spec.base_model))
        for row in job.rows:
            row.scored[:] = True
        scorer = Trainer(loaded, job, without_gradients(job.spec.resources, self.device), cancelled)  # validates the rows
        model = attach_for_job(loaded, job) if ROLE_PREVIOUS in job.adapters else None
        try:
            if model is not None:
                results = scorer.logprobs(model, list(range(len(job.rows))))
            else:
                with base_only(loaded):  # live adapters may be attached to it
                    results = scorer.logprobs(loaded.model, list(range(len(job.rows))))
        finally:
            if model is not None:
                detach(model)
        batch: list[Any] = []
        floats = 0
        for i in range(len(job.rows)):
            if batch and floats + len(results[i]) > SCORE_BATCH_FLOATS:
                yield pb.ScoreResponse(rows=batch)
                batch, floats = [], 0
            batch.append(pb.RowLogprobs(logprobs=results[i].tolist()))
            floats += len(results[i])
        if batch:
            yield pb.ScoreResponse(rows=batch)

    def AdapterCommand(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        cancelled = self._cancel_event(context)
        got = None
        try:
            got = read_command(requests)  # before the lock: a slow upload holds nothing
            with self._model_in_use(context):
                yield from self.live.run(got, cancelled)
        except Exception as error:
            self._abort(context, error, job_id=f"{got.kind_name} of {got.command.adapter_id!r}" if got else "adapter command")

    # --- plumbing ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _model_in_use(self, context: grpc.ServicerContext) -> Iterator[None]:
        """The compute lock, waited for as long as the call is alive."""
        while not self.compute.acquire(timeout=0.25):
            if not context.is_active():
                raise CancelledError("the call ended while waiting for the trainer")
        try:
            yield
        finally:
            self.compute.release()

    class _Exclusive:
        def __init__(self, lock: threading.Lock, context: grpc.ServicerContext) -> None:
            self.lock, self.context = lock, context

        def __enter__(self) -> None:
            if not self.lock.acquire(blocking=False):
                self.context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "the trainer is busy with another job")

        def __exit__(self, *exc: object) -> None:
            self.lock.release()

    def _exclusive(self, context: grpc.ServicerContext) -> "TrainerService._Exclusive":
        return TrainerService._Exclusive(self.busy, context)

    @staticmethod
    def _cancel_event(context: grpc.ServicerContext) -> threading.Event:
        event = threading.Event()
        context.add_callback(event.set)  # runs when the call ends for any reason, the client's cancel included
        return event

    @staticmethod
    def _abort(context: grpc.ServicerContext, error: Exception, job_id: Any) -> None:
        if isinstance(error, InputError):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        if isinstance(error, UnsupportedModelError):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(error))
        if isinstance(error, CancelledError):
            context.abort(grpc.StatusCode.CANCELLED, str(error))
        if isinstance(error, NotFoundError):
            context.abort(grpc.StatusCode.NOT_FOUND, str(error))
        if isinstance(error, AlreadyExistsError):
            context.abort(grpc.StatusCode.ALREADY_EXISTS, str(error))
        log.exception("job %s failed", job_id)
        context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")


def serve(address: str, device: torch.device, threads: int, secret: str | None = None, tls: tuple[bytes, bytes] | None = None) -> tuple[grpc.Server, int]:
    """Serves on `address` (port 0: any free one; the bound port is returned). `secret`: every call
    must carry it (auth.py); `tls`: (certificate chain PEM, private key PEM)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        interceptors=[SecretInterceptor(secret)] if secret else [],
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES), ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)],
    )
    pb_grpc.add_TrainerServicer_to_server(TrainerService(device, threads), server)
    if tls:
        cert, key = tls
        port = server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise RuntimeError(f"cannot listen on {address}")
    server.start()
    return server, port

