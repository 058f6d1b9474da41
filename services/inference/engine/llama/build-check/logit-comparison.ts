// Whether two runs of one prompt agree on the next token's logits: the reference (one token at a
// time, plain dot-product kernels) against a batched prefill (the batched kernels: AMX tiles,
// repacked weights). Both quantize activations, in different block orders, so they differ a little;
// a miscompiled kernel gives unrelated logits or non-finite ones.
export interface LogitComparison {
  ok: boolean;
  /** Largest absolute difference over the vocabulary, relative to the reference's logit range. */
  relativeMaxDiff: number;
  summary: string;
}

/** Differences above this share of the logit range mean the kernels disagree. */
export const MAX_RELATIVE_DIFF = 0.05;

/** Logits by token id (any key type: node-llama-cpp's Token is a branded number). */
export function compareLogits<Key>(reference: Map<Key, number>, candidate: Map<Key, number>): LogitComparison {
  if (reference.size === 0 || candidate.size !== reference.size) {
    return { ok: false, relativeMaxDiff: Infinity, summary: `logits of ${candidate.size} tokens against ${reference.size}` };
  }
  let min = Infinity;
  let max = -Infinity;
  let maxDiff = 0;
  for (const [token, value] of reference) {
    const other = candidate.get(token);
    if (other === undefined || !Number.isFinite(other) || !Number.isFinite(value)) {
      return { ok: false, relativeMaxDiff: Infinity, summary: `token ${String(token)}: ${other} against ${value}` };
    }
    min = Math.min(min, value);
    max = Math.max(max, value);
    maxDiff = Math.max(maxDiff, Math.abs(other - value));
  }
  const relativeMaxDiff = maxDiff / Math.max(max - min, 1e-6);
  const ok = relativeMaxDiff <= MAX_RELATIVE_DIFF;
  return { ok, relativeMaxDiff, summary: `largest logit difference ${maxDiff.toPrecision(3)}, ${(relativeMaxDiff * 100).toFixed(2)}% of the logit range${ok ? "" : ` (over ${MAX_RELATIVE_DIFF * 100}%)`}` };
}
