// Runs an evaluation: each item on each step's checkpoint through the chat endpoint in-process (the
// same resolution, admission and limits as a client's request), a few at a time so that one
// evaluation does not take all of the entity's engine sequences; each output is scored as it arrives.
import { create, fromJson, type JsonObject } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import { EvaluationSchema, type CreateEvaluationRequest, type Evaluation, type EvaluationItem, type EvaluationOutput, type EvaluationScore } from "../../gen/srl/v1/evaluations_pb.js";
import { ChatCompletionRequestSchema } from "../../gen/srl/v1/inference_pb.js";
import { ApiError } from "../core/errors.js";
import type { ChatCompletions, EndpointCall } from "../inference/index.js";
import type { CheckedRequest } from "./request-checks.js";

/** Generations of one evaluation in flight at once. */
export const EVALUATION_CONCURRENCY = 3;

interface Generated {
  text: string;
  finishReason: string;
  passed: boolean;
  reason: string;
}

/** `caller`: the entity it runs for, and the request's signal (aborted when the client goes away). */
export async function runEvaluation(chat: ChatCompletions, caller: { entity: string; signal: AbortSignal }, request: CreateEvaluationRequest, checked: CheckedRequest): Promise<Evaluation> {
  const started = performance.now();
  const createdAt = new Date();
  const { model, steps, scorer } = checked;
  const modelName = (step: number) => `wandb-artifact:///${model.entity}/${model.project}/${model.name}:step${step}`;
  // Step-major, so that the generations in flight mostly share one adapter.
  const tasks = steps.flatMap((step, s) => request.items.map((_, i) => ({ s, i, step })));
  const generated: Generated[][] = steps.map(() => []);
  const stop = new AbortController();
  const signal = AbortSignal.any([caller.signal, stop.signal]);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length && !signal.aborted) {
      const task = tasks[next++];
      if (!task) break;
      const item = request.items[task.i] as EvaluationItem;
      const messages: JsonObject[] = [...(request.system !== undefined ? [{ role: "system", content: request.system }] : []), { role: "user", content: item.prompt }];
      const body: JsonObject = { model: modelName(task.step), messages, max_tokens: checked.maxTokens, temperature: checked.temperature };
      try {
        const call: EndpointCall = { entity: () => caller.entity, sent: () => body, setHeader: () => {}, signal };
        const completion = await chat.create(fromJson(ChatCompletionRequestSchema, body), call);
        const choice = completion.choices?.[0];
        const text = choice?.message?.content ?? "";
        // Scored as it arrives: a slow match (bounded.ts) then holds the event loop for one output, between generations.
        (generated[task.s] as Generated[])[task.i] = { text, finishReason: choice?.finishReason ?? "", ...scorer.score(text, item) };
      } catch (error) {
        stop.abort();
        throw error instanceof ApiError ? new ApiError(error.kind, `items[${task.i}] on step ${task.step}: ${error.message}`, error.violations, undefined, error.retryAfterSeconds) : error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(EVALUATION_CONCURRENCY, tasks.length) }, worker));
  if (caller.signal.aborted) throw new ApiError("cancelled", "the evaluation was cancelled: the client went away");

  const rows = request.items.map((item, i) => ({
    prompt: item.prompt,
    expected: item.expected,
    outputs: steps.map((step, s): Omit<EvaluationOutput, "$typeName"> => {
      const out = (generated[s] as Generated[])[i] as Generated;
      return { step, text: out.text, finishReason: out.finishReason, passed: out.passed, reason: out.reason };
    }),
  }));
  const scores = steps.map((step, s): Omit<EvaluationScore, "$typeName"> => {
    const passed = rows.filter((row) => row.outputs[s]?.passed).length;
    return { step, passed, total: rows.length, score: rows.length > 0 ? passed / rows.length : 0 };
  });
  return create(EvaluationSchema, {
    id: randomUUID(),
    modelId: model._id,
    name: request.name?.trim() ? request.name : `${request.metric?.type ?? "evaluation"} ${createdAt.toISOString()}`,
    createdAt: createdAt.toISOString(),
    metric: request.metric,
    steps,
    scores,
    rows,
    system: request.system,
    maxTokens: checked.maxTokens,
    temperature: checked.temperature,
    duration: (performance.now() - started) / 1000,
  });
}
