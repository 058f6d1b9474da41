// A safetensors file of F32 tensors (8-byte LE header size, JSON header, data), for tests that
// hand adapters to the trainer or to the service's checks. A tensor without data is zeros.
export function safetensors(tensors: Record<string, { shape: number[]; data?: Float32Array }>): Buffer {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  const blocks: Buffer[] = [];
  let offset = 0;
  for (const [name, { shape, data }] of Object.entries(tensors)) {
    const bytes = data ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.alloc(4 * shape.reduce((a, b) => a * b, 1));
    header[name] = { dtype: "F32", shape, data_offsets: [offset, offset + bytes.length] };
    offset += bytes.length;
    blocks.push(bytes);
  }
  const json = Buffer.from(JSON.stringify(header));
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([size, json, ...blocks]);
}
