// HTTP byte ranges of a download (`Range: bytes=a-b`, one range): wandb-core's parquet reader
// (0.28+) reads a history file's footer and columns with range requests when the scan names keys
// and nothing is cached, and refuses a server that answers them with the whole file.

export interface ByteRange {
  /** First byte (inclusive). */
  start: number;
  /** Last byte (inclusive). */
  end: number;
}

/**
 * The one range a `Range` header asks of `size` bytes; null when there is none, or it is not one
 * satisfiable byte range: the whole file is answered then (as HTTP allows a server to).
 */
export function parseByteRange(header: string | null | undefined, size: number): ByteRange | null {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header?.trim() ?? "");
  if (!match || (match[1] === "" && match[2] === "")) return null;
  const [first, last] = [match[1] as string, match[2] as string];
  if (first === "") {
    // A suffix: the last N bytes.
    const length = Math.min(Number(last), size);
    return length === 0 ? null : { start: size - length, end: size - 1 };
  }
  const start = Number(first);
  if (start >= size) return null;
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1);
  return end < start ? null : { start, end };
}

/** The bytes `range` of a stream of chunks (read through up to the range's end, no further). */
export async function* sliceChunks(chunks: AsyncIterable<Buffer>, range: ByteRange): AsyncGenerator<Buffer> {
  let offset = 0;
  for await (const chunk of chunks) {
    const from = Math.max(range.start - offset, 0);
    const to = Math.min(range.end + 1 - offset, chunk.length);
    if (to > from) yield chunk.subarray(from, to);
    offset += chunk.length;
    if (offset > range.end) return;
  }
}
