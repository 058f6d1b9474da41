// Sequential little-endian reads from an open file through a refillable window, so a header of
// any size is parsed without reading the whole file. `need(n)` returns a promise only when the
// window must be refilled: parsing a buffered header does not pay one await per value.
import type { FileHandle } from "node:fs/promises";

const WINDOW = 1 << 20;

export class FileCursor {
  private buf = Buffer.alloc(0);
  private bufStart = 0;
  position = 0;

  constructor(private readonly file: FileHandle, readonly fileSize: number) {}

  need(n: number): Promise<void> | undefined {
    if (this.position + n <= this.bufStart + this.buf.length) return undefined;
    return this.refill(n);
  }

  private async refill(n: number): Promise<void> {
    if (this.position + n > this.fileSize) {
      throw new Error(`unexpected end of file: need ${n} bytes at offset ${this.position}, file has ${this.fileSize}`);
    }
    const size = Math.min(Math.max(n, WINDOW), this.fileSize - this.position);
    const buf = Buffer.alloc(size);
    const { bytesRead } = await this.file.read(buf, 0, size, this.position);
    if (bytesRead < n) throw new Error(`short read at offset ${this.position}`);
    this.buf = buf.subarray(0, bytesRead);
    this.bufStart = this.position;
  }

  /** Callers must have awaited need(n) first. */
  private take(n: number): number {
    const at = this.position - this.bufStart;
    this.position += n;
    return at;
  }

  u8() { return this.buf.readUInt8(this.take(1)); }
  i8() { return this.buf.readInt8(this.take(1)); }
  u16() { return this.buf.readUInt16LE(this.take(2)); }
  i16() { return this.buf.readInt16LE(this.take(2)); }
  u32() { return this.buf.readUInt32LE(this.take(4)); }
  i32() { return this.buf.readInt32LE(this.take(4)); }
  u64() { return this.buf.readBigUInt64LE(this.take(8)); }
  i64() { return this.buf.readBigInt64LE(this.take(8)); }
  f32() { return this.buf.readFloatLE(this.take(4)); }
  f64() { return this.buf.readDoubleLE(this.take(8)); }
  utf8(n: number) {
    const at = this.take(n);
    return this.buf.toString("utf8", at, at + n);
  }
}
