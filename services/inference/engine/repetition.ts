// repetition_detection (vLLM): generation stops when the output ends in the same block of tokens
// repeated min_count times, for some block length in [min_pattern_size, max_pattern_size].
export function repeats(tokens: readonly number[], settings: { minPatternSize: number; maxPatternSize: number; minCount: number }): boolean {
  for (let size = settings.minPatternSize; size <= settings.maxPatternSize; size++) {
    const span = size * settings.minCount;
    if (span > tokens.length) break;
    const start = tokens.length - span;
    let same = true;
    for (let i = size; i < span && same; i++) same = tokens[start + i] === tokens[start + (i % size)];
    if (same) return true;
  }
  return false;
}
