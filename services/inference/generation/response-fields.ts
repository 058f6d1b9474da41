// Response fields chat completions and legacy completions write alike.
import { createHash } from "node:crypto";
import type { ServeTarget } from "./resolve-model.js";

/**
 * OpenAI's `system_fingerprint`: which weights answered, so a caller can tell which checkpoint a
 * model name without a step (its latest) was served from, and that two answers came from the same
 * one. Greedy text alone cannot tell: an engine reusing a cached prompt prefix evaluates fewer
 * tokens per batch, and float sums in another order can turn a near tie the other way.
 */
export function systemFingerprint(target: Pick<ServeTarget, "base" | "adapterSha256">): string {
  const weights = `${target.base.name}\u0000${target.adapterSha256 ?? ""}`;
  return `fp_${createHash("sha256").update(weights).digest("hex").slice(0, 12)}`;
}

export function usageMessage(usage: { promptTokens: number; completionTokens: number; cachedTokens: number }) {
  return {
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    totalTokens: usage.promptTokens + usage.completionTokens,
    promptTokensDetails: { cachedTokens: usage.cachedTokens },
  };
}

export function stopReasonValue(reason: number | string | null) {
  if (reason === null) return undefined;
  return typeof reason === "number" ? { kind: { case: "numberValue" as const, value: reason } } : { kind: { case: "stringValue" as const, value: reason } };
}
