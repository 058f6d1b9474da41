// Size checks shared by the block quantisers: a tensor is a whole number of blocks, and a decoder
// is given at least the bytes those blocks take (a short read would otherwise decode as zeros).

/** The number of `block`-value blocks in `elements` values; throws when it is not whole. */
export function blockCount(type: string, block: number, elements: number): number {
  if (elements % block !== 0) throw new Error(`${type} needs a multiple of ${block} values, got ${elements}`);
  return elements / block;
}

export function checkBlockBytes(type: string, bytes: Uint8Array, blocks: number, blockBytes: number): void {
  if (bytes.length < blocks * blockBytes) throw new Error(`${type} data is ${bytes.length} bytes, expected ${blocks * blockBytes}`);
}
