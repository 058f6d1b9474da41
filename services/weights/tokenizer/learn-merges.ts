// Learns byte-level BPE merges from a corpus, deterministically: text is split with the same
// pre-tokenizer regex llama.cpp uses for `tokenizer.ggml.pre = "qwen2"` (merges never cross those
// boundaries), then the most frequent adjacent pair is merged repeatedly; ties go to the pair
// that sorts first, so the result depends only on the corpus and the merge budget.
import { bytesToUnicode } from "./byte-unicode.js";

/** llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2 regex (src/llama-vocab.cpp), in JS syntax. */
export const QWEN2_PRETOKENIZE =
  /(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

export function pretokenize(text: string): string[] {
  return text.match(QWEN2_PRETOKENIZE) ?? [];
}

export interface LearnedMerges {
  /** "left right" pairs in the byte-unicode alphabet, in rank order. */
  merges: string[];
  /** New vocabulary entries, in the order they first appeared (a merge may recreate an existing one). */
  newTokens: string[];
}

export function learnMerges(corpus: string, maxNewTokens: number): LearnedMerges {
  const encoder = new TextEncoder();
  const wordCounts = new Map<string, number>();
  for (const piece of pretokenize(corpus)) {
    const word = bytesToUnicode(encoder.encode(piece));
    wordCounts.set(word, (wordCounts.get(word) ?? 0) + 1);
  }
  const words = [...wordCounts].map(([word, count]) => ({ symbols: [...word], count }));

  const merges: string[] = [];
  const newTokens: string[] = [];
  const known = new Set<string>();
  while (newTokens.length < maxNewTokens) {
    const best = mostFrequentPair(words);
    if (!best) break;
    const [left, right] = best;
    merges.push(`${left} ${right}`);
    const merged = left + right;
    if (!known.has(merged)) {
      known.add(merged);
      newTokens.push(merged);
    }
    for (const w of words) w.symbols = mergeSymbols(w.symbols, left, right, merged);
  }
  return { merges, newTokens };
}

/** The pair with the highest count (pairs seen once too, once the corpus runs short); ties broken by code-unit order. */
function mostFrequentPair(words: readonly { symbols: string[]; count: number }[]): [string, string] | undefined {
  const counts = new Map<string, number>();
  for (const { symbols, count } of words) {
    for (let i = 0; i + 1 < symbols.length; i++) {
      // "\u0000" cannot occur inside a symbol (bytes map to printable characters).
      const key = symbols[i] + "\u0000" + symbols[i + 1];
      counts.set(key, (counts.get(key) ?? 0) + count);
    }
  }
  let bestKey: string | undefined;
  let bestCount = 0;
  for (const [key, count] of counts) {
    if (count > bestCount || (count === bestCount && bestKey !== undefined && key < bestKey)) {
      bestKey = key;
      bestCount = count;
    }
  }
  if (bestKey === undefined) return undefined;
  const [left, right] = bestKey.split("\u0000");
  return [left!, right!];
}

function mergeSymbols(symbols: string[], left: string, right: string, merged: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < symbols.length; i++) {
    if (i + 1 < symbols.length && symbols[i] === left && symbols[i + 1] === right) {
      out.push(merged);
      i++;
    } else {
      out.push(symbols[i]!);
    }
  }
  return out;
}
