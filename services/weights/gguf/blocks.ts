// Shared by the block quantisers: a tensor is a whole number of blocks, and a decoder is given at
// least the bytes those blocks take (a short read would otherwise decode as zeros).

/** The number of `block`-value blocks in `elements` values; throws when it is not whole. */
export function blockCount(type: string, block: number, elements: number): number {
  if (elements % block !== 0) throw new Error(`${type} needs a multiple of ${block} values, got ${elements}`);
  return elements / block;
}

function checkBlockBytes(type: string, bytes: Uint8Array, blocks: number, blockBytes: number): void {
  if (bytes.length < blocks * blockBytes) throw new Error(`${type} data is ${bytes.length} bytes, expected ${blocks * blockBytes}`);
}

/**
 * Decodes `elements` values stored as blocks of `blockValues` values in `blockBytes` bytes each:
 * the sizes checked, then `decodeBlock` per block with the block's byte offset `at` and the index
 * `base` of its first value in `out`.
 */
export function decodeBlocks(
  type: string,
  blockValues: number,
  blockBytes: number,
  bytes: Uint8Array,
  elements: number,
  decodeBlock: (view: DataView, at: number, out: Float32Array, base: number) => void,
): Float32Array {
  const blocks = blockCount(type, blockValues, elements);
  checkBlockBytes(type, bytes, blocks, blockBytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(elements);
  for (let b = 0; b < blocks; b++) decodeBlock(view, b * blockBytes, out, b * blockValues);
  return out;
}
