// Response fields chat completions and legacy completions write alike.

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
