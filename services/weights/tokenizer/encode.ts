// A plain reference encoder for a TokenizerSpec (no special-token parsing): pre-tokenize, then
// apply merges by rank inside each piece. Tests compare it with llama.cpp's tokenizer to show the
// file describes the tokenizer we meant; it is small and slow, not for serving.
import { bytesToUnicode } from "./byte-unicode.js";
import type { TokenizerSpec } from "./build.js";
import { pretokenize } from "./learn-merges.js";

export function encodeWithSpec(spec: TokenizerSpec, text: string): number[] {
  const ranks = new Map(spec.merges.map((m, i) => [m, i]));
  const ids = new Map(spec.tokens.map((t, i) => [t, i]));
  const encoder = new TextEncoder();
  const out: number[] = [];
  for (const piece of pretokenize(text)) {
    let symbols = [...bytesToUnicode(encoder.encode(piece))];
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const rank = ranks.get(`${symbols[i]} ${symbols[i + 1]}`);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          best = i;
        }
      }
      if (best < 0) break;
      symbols = [...symbols.slice(0, best), symbols[best]! + symbols[best + 1]!, ...symbols.slice(best + 2)];
    }
    for (const s of symbols) out.push(ids.get(s)!);
  }
  return out;
}
