"""One training job on a loaded base model with its LoRA attached (lora/attach.py): run the
planned optimizer steps (packed micro-batches, the SFT or RL loss, clipping, AdamW), report each
step, and return the new adapter."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Generator

import numpy as np
import torch
from peft import PeftModel

from . import proto
from .base_models import LoadedModel
from .errors import CancelledError, InputError
from .forward import layer_checkpointing, logprobs_by_row, pack_rows, scored_logprobs
from .job_input import ROLE_REFERENCE, JobInput, Row
from .lora.adapter import Adapter
from .lora.attach import active_adapter, read_adapter, read_input
from .losses import RlLossConfig, rl_loss, sft_loss
from .packing import plan_packs
from .resources import Resources


@dataclass
class JobResult:
    trained: bool
    adapter: Adapter


def rl_config(message: Any) -> RlLossConfig:
    """The RlLoss the worker sent (resolved there), an unset field as the contract's default."""
    sent = proto.with_defaults(message)
    return RlLossConfig(**{f.name: sent[f.name] for f in dataclasses.fields(RlLossConfig)})


class Trainer:
    def __init__(self, loaded: LoadedModel, job: JobInput, resources: Resources, cancelled: threading.Event) -> None:
        self.loaded = loaded
        self.job = job
        self.spec = job.spec
        self.resources = resources
        self.cancelled = cancelled
        self.device = loaded.model.device
        self.autocast = self.device.type == "cuda"
        vocab = loaded.model.config.vocab_size
        for i, row in enumerate(job.rows):
            if row.tokens.max() >= vocab or row.tokens.min() < 0:
                raise InputError(f"row {i} has token ids outside the base model's vocabulary (0..{vocab - 1})")
        for k, step in enumerate(self.spec.steps):
            if any(r >= len(job.rows) for r in step.rows):
                raise InputError(f"optimizer step {k + 1} names a row beyond the {len(job.rows)} sent")
            if not math.isfinite(step.learning_rate) or step.learning_rate < 0:
                raise InputError(f"optimizer step {k + 1} has learning rate {step.learning_rate}")
        if self.spec.WhichOneof("loss") == "rl" and self.spec.rl.truncated_importance_sampling and not self.spec.rl.precalculate_logprobs:
            # ART 0.5.23 applies it to recomputed-over-sampler ratios only (art/loss.py).
            raise InputError("truncated_importance_sampling needs precalculate_logprobs")

    def _check(self) -> None:
        if self.cancelled.is_set():
            raise CancelledError("the job was cancelled")

    # --- log-probabilities without gradient (precalculated old log-probs, KL reference) -------

    def logprobs(self, model: torch.nn.Module, rows: list[int]) -> dict[int, np.ndarray]:
        """Without gradient: the rows' log-probs at their scored positions."""
        r = self.resources
        return logprobs_by_row(model, self.job.rows, rows, r.micro_batch_tokens, r.logits_chunk_tokens, self.autocast, self._check)

    def _reference_logprobs(self, model: PeftModel, rows: list[int]) -> dict[int, np.ndarray]:
        reference = self.job.adapters.get(ROLE_REFERENCE)
        if reference is None:
            with model.disable_adapter():  # §4.3: the base model, LoRA off
                return self.logprobs(model, rows)
        adapter = read_input(reference.files, reference.format, self.loaded)
        with active_adapter(model, adapter, "reference"):
            return self.logprobs(model, rows)

    # --- training -----------------------------------------------------------------------------

    def run(self, model: PeftModel) -> Generator[tuple[int, dict[str, float]], None, JobResult]:
        """Yields (step, metrics) after each optimizer step; returns the result."""
        spec = self.spec
        is_rl = spec.WhichOneof("loss") == "rl"
        rl = rl_config(spec.rl) if is_rl else None
        used = sorted({r for step in spec.steps for r in step.rows})
        recomputed = self.logprobs(model, used) if is_rl and spec.rl.precalculate_logprobs else None
        reference = self._reference_logprobs(model, used) if rl and rl.kl_penalty_coef > 0 else None
        params = [p for p in model.parameters() if p.requires_grad]
        o = proto.with_defaults(spec.optimizer)
        optimizer = torch.optim.AdamW(params, lr=0.0, betas=(o["beta1"], o["beta2"]), eps=o["eps"], weight_decay=o["weight_decay"])
        applied = 0
        for k, step in enumerate(spec.steps, start=1):
            self._check()
            started = time.perf_counter()
            for group in optimizer.param_groups:
                group["lr"] = step.learning_rate
            metrics = self._step(model, list(step.rows), rl, recomputed, reference)
            if metrics.pop("_trainable") > 0:
                grad_norm = float(torch.nn.utils.clip_grad_norm_(params, o["max_grad_norm"] or float("inf")))  # 0: no clipping
                if math.isfinite(grad_norm) and math.isfinite(metrics["loss"]):
                    optimizer.step()
                    applied += 1
                optimizer.zero_grad(set_to_none=True)
                metrics["grad_norm"] = grad_norm
            else:
                metrics["grad_norm"] = 0.0
            seconds = time.perf_counter() - started
            metrics["learning_rate"] = step.learning_rate
            metrics["tokens_per_second"] = metrics["num_tokens"] / seconds if seconds > 0 else 0.0
            yield k, metrics
        return JobResult(trained=applied > 0, adapter=read_adapter(model))

    def _step(self, model: PeftModel, rows: list[int], rl: RlLossConfig | None, recomputed: dict[int, np.ndarray] | None, reference: dict[int, np.ndarray] | None) -> dict[str, float]:
        job_rows = self.job.rows
        trainable = sum(job_rows[r].scored_count for r in rows)
        live_rows = sum(1 for r in rows if job_rows[r].scored_count > 0)
        totals = {"loss": 0.0, "entropy": 0.0, "kl_policy_ref": 0.0, "gap_abs": 0.0, "gap_kl": 0.0, "gap_n": 0.0}
        num_tokens = sum(len(job_rows[r].tokens) for r in rows)
        if trainable > 0:
            lengths = {r: len(job_rows[r].tokens) for r in rows}
            for members in plan_packs(lengths, self.resources.micro_batch_tokens):
                self._check()
                pack = pack_rows(members, job_rows, self.device)
                with layer_checkpointing(model, self.resources.checkpoint(pack.num_tokens)):
                    lp, entropy = scored_logprobs(model, pack, self.resources.logits_chunk_tokens, self.autocast)
                    if rl is None:
                        loss = sft_loss(lp, torch.ones_like(lp), trainable)
                    else:
                        loss = self._rl_loss(lp, entropy, pack.rows, rl, recomputed, reference, live_rows, totals)
                    loss.backward()
                totals["loss"] += float(loss.detach())
        metrics: dict[str, float] = {"_trainable": float(trainable), "loss": totals["loss"], "num_tokens": float(num_tokens), "num_trainable_tokens": float(trainable)}
        if rl is not None:
            metrics["entropy"] = totals["entropy"]
            if rl.kl_penalty_coef > 0:
                metrics["kl_policy_ref"] = totals["kl_policy_ref"]
            if totals["gap_n"] > 0:
                metrics["sampler_logprob_abs_diff"] = totals["gap_abs"] / totals["gap_n"]
                metrics["sampler_trainer_kl"] = totals["gap_kl"] / totals["gap_n"]
        return metrics

    def _rl_loss(self, lp: torch.Tensor, entropy: torch.Tensor, pack_rows: list[int], rl: RlLossConfig, recomputed: dict[int, np.ndarray] | None, reference: dict[int, np.ndarray] | None, live_rows: int, totals: dict[str, float]) -> torch.Tensor:
        rows: list[Row] = [self.job.rows[r] for r in pack_rows]
        as_tensor = lambda parts: torch.from_numpy(np.concatenate(parts).astype(np.float32)).to(lp.device)  # noqa: E731
        sampler = as_tensor([row.sampler_at_scored() for row in rows])
        counts = [row.scored_count for row in rows]
        row_ids = torch.from_numpy(np.repeat(np.arange(len(rows)), counts)).to(lp.device)
        advantages = as_tensor([np.full(n, row.advantage) for row, n in zip(rows, counts)])
        weights = as_tensor([np.full(n, row.weight) for row, n in zip(rows, counts)])
        old = as_tensor([recomputed[r] for r in pack_rows]) if recomputed is not None else sampler
        result = rl_loss(
            lp,
            old,
            advantages,
            weights,
            torch.ones_like(lp),
            row_ids,
            len(rows),
            rl,
            original_logprobs=sampler if recomputed is not None else None,
            ref_logprobs=as_tensor([reference[r] for r in pack_rows]) if reference is not None else None,
            entropy=entropy,
        )
        # The loss is a mean over the step's rows: this pack's rows carry their share of it.
        share = sum(1 for n in counts if n > 0) / max(live_rows, 1)
        if result.entropy is not None:
            totals["entropy"] += float(result.entropy) * share
        if result.kl_policy_ref is not None:
            totals["kl_policy_ref"] += float(result.kl_policy_ref) * share
        # The sampler against the trainer (the pre-update policy when it was recomputed).
        trainer_view = old if recomputed is not None else lp.detach()
        present = ~torch.isnan(sampler)
        diff = (trainer_view - sampler)[present]
        totals["gap_abs"] += float(diff.abs().sum())
        totals["gap_kl"] += float((torch.exp(diff) - 1 - diff).sum())  # k3 estimate of KL(sampler || trainer)
        totals["gap_n"] += float(present.sum())
        return result.loss * share

