// A typed array's own bytes, without a copy: the SDK's tensors are little-endian, as every
// platform Node runs this service on is.
export function bytesOf(array: Int32Array | Float32Array | BigInt64Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}
