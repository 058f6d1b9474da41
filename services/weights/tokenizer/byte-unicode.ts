// GPT-2's reversible byte <-> unicode mapping: printable Latin-1 bytes map to themselves, the
// rest to U+0100 onwards, so every byte string becomes a string with no spaces or control
// characters (space is "Ġ", newline "Ċ"). llama.cpp's BPE vocab decodes tokens with the same map.

export const BYTE_TO_UNICODE: readonly string[] = buildByteToUnicode();
export const UNICODE_TO_BYTE: ReadonlyMap<string, number> = new Map(BYTE_TO_UNICODE.map((ch, b) => [ch, b]));

function buildByteToUnicode(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : next++));
  return out;
}

export function bytesToUnicode(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += BYTE_TO_UNICODE[b]!;
  return s;
}

export function unicodeToBytes(text: string): Uint8Array {
  const out: number[] = [];
  for (const ch of text) {
    const b = UNICODE_TO_BYTE.get(ch);
    if (b === undefined) throw new Error(`character ${JSON.stringify(ch)} is not in the byte-level alphabet`);
    out.push(b);
  }
  return Uint8Array.from(out);
}
