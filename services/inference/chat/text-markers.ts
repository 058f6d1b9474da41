// Shared by the parsers that hold back streamed text which may be the start of a marker.

/** Length of the longest suffix of `text` that is a proper prefix of `marker`. */
export function partialSuffix(text: string, marker: string): number {
  for (let keep = Math.min(marker.length - 1, text.length); keep > 0; keep--) {
    if (text.endsWith(marker.slice(0, keep))) return keep;
  }
  return 0;
}
