// Opens a GGUF file, parses its header, and reads tensors on demand with positioned fd reads:
// the file is never loaded whole, so a multi-GB model costs only the tensors asked for.
import { open, type FileHandle } from "node:fs/promises";
import { FileCursor } from "./file-cursor.js";
import { decodeHeader, type GgufHeader, type GgufTensorInfo } from "./header-decode.js";
import { decodeTensor } from "./tensor-codec.js";
import { isSupportedTensorType, SUPPORTED_TENSOR_TYPES } from "./types.js";
import type { GgufMetadata } from "./types.js";

export type { GgufHeader, GgufTensorInfo };

export class GgufReader {
  private readonly byName: Map<string, GgufTensorInfo>;

  private constructor(
    private readonly file: FileHandle,
    readonly path: string,
    readonly header: GgufHeader,
  ) {
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
  }

  static async open(path: string): Promise<GgufReader> {
    const file = await open(path, "r");
    try {
      const { size } = await file.stat();
      const header = await decodeHeader(new FileCursor(file, size));
      return new GgufReader(file, path, header);
    } catch (err) {
      await file.close();
      throw err instanceof Error ? new Error(`${path}: ${err.message}`, { cause: err }) : err;
    }
  }

  get metadata(): GgufMetadata {
    return this.header.metadata;
  }

  get tensors(): readonly GgufTensorInfo[] {
    return this.header.tensors;
  }

  tensor(name: string): GgufTensorInfo | undefined {
    return this.byName.get(name);
  }

  /** The raw stored bytes of a tensor of a type whose size is known (see GGML_TYPES). */
  async readTensorBytes(name: string): Promise<Uint8Array> {
    const info = this.require(name);
    if (info.byteSize === undefined) throw new Error(`tensor ${name} has type ${info.type}, whose byte size this reader does not know`);
    const bytes = new Uint8Array(info.byteSize);
    const { bytesRead } = await this.file.read(bytes, 0, info.byteSize, info.fileOffset);
    if (bytesRead !== info.byteSize) throw new Error(`tensor ${name}: short read`);
    return bytes;
  }

  /** The tensor's values in ggml memory order (ne0 fastest), dequantised to f32. */
  async readTensor(name: string): Promise<Float32Array> {
    const info = this.require(name);
    if (!isSupportedTensorType(info.type)) {
      throw new Error(`tensor ${name} has type ${info.type}, which this reader does not support (supported: ${SUPPORTED_TENSOR_TYPES.join(", ")})`);
    }
    return decodeTensor(info.type, await this.readTensorBytes(name), info.elements);
  }

  async close(): Promise<void> {
    await this.file.close();
  }

  private require(name: string): GgufTensorInfo {
    const info = this.byName.get(name);
    if (!info) throw new Error(`${this.path} has no tensor ${name}`);
    return info;
  }
}

/** Header only (metadata and tensor infos), file closed again. */
export async function readGgufHeader(path: string): Promise<GgufHeader> {
  const reader = await GgufReader.open(path);
  await reader.close();
  return reader.header;
}
