// Whether a LoRA adapter's files are safe to keep and serve for a base model: what a trainer sends
// back and what a `lora` artifact brings in are both checked here before they become a checkpoint.
// A checkpoint's file names end up in paths and tar entries, its tensors in every forward pass of
// the engine (one NaN poisons every logit), and its rank in llama.cpp's allocations, so:
// - file names: only `adapter.gguf` (llama.cpp's LoRA GGUF) and PEFT's `adapter_config.json` and
//   `adapter_model.safetensors`; anything else (`..`, a path, NUL, a 300-character name) is refused;
// - tensors: only `<projection>.lora_a/.lora_b` of a layer the base has (GGUF), or
//   `base_model.model.model.layers.N.<module>.lora_A/B.weight` (PEFT), for the architecture's LoRA
//   targets; shapes [n_in x rank] / [rank x n_out] against the base's own dims; every value finite;
// - rank an integer 1..MAX_LORA_RANK, alpha finite in (0, MAX_LORA_ALPHA], the same in every tensor
//   and, when both formats are present, in both.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GgufReader, readGgufHeader } from "./gguf/reader.js";
import { getNumber, getString } from "./gguf/values.js";

export const ADAPTER_GGUF_FILE = "adapter.gguf";
export const PEFT_CONFIG_FILE = "adapter_config.json";
export const PEFT_WEIGHTS_FILE = "adapter_model.safetensors";
/** Far above any LoRA in use (8-256); a larger rank is a full fine-tune in disguise or garbage. */
export const MAX_LORA_RANK = 1024;
/** PEFT's alphas are small multiples of the rank; this bounds the scale alpha / rank at 65536. */
export const MAX_LORA_ALPHA = 65_536;
/** A safetensors header is a few KB per tensor; this is for a few thousand tensors. */
const MAX_SAFETENSORS_HEADER_BYTES = 16 << 20;

export class AdapterCheckError extends Error {}

/** What the checks need of the base model: its GGUF header. */
export interface AdapterBase {
  architecture: string;
  blockCount: number;
  /** GGUF tensor name -> ggml dims; a projection's are [n_in, n_out]. */
  shapes: ReadonlyMap<string, readonly number[]>;
}

export interface AdapterSummary {
  rank: number;
  alpha: number;
  /** The base tensors adapted ("blk.0.attn_q.weight"), sorted. */
  targets: string[];
}

/** Hugging Face module (under model.layers.N) -> llama.cpp tensor, per architecture (as srl_trainer/architectures.py). */
const DENSE_TARGETS: Record<string, string> = {
  "self_attn.q_proj": "attn_q",
  "self_attn.k_proj": "attn_k",
  "self_attn.v_proj": "attn_v",
  "self_attn.o_proj": "attn_output",
  "mlp.gate_proj": "ffn_gate",
  "mlp.up_proj": "ffn_up",
  "mlp.down_proj": "ffn_down",
};
const PHI3_TARGETS: Record<string, string> = { "self_attn.qkv_proj": "attn_qkv", "self_attn.o_proj": "attn_output", "mlp.gate_up_proj": "ffn_up", "mlp.down_proj": "ffn_down" };
const TARGETS_BY_ARCHITECTURE: Record<string, Record<string, string>> = { llama: DENSE_TARGETS, qwen2: DENSE_TARGETS, qwen3: DENSE_TARGETS, gemma2: DENSE_TARGETS, gemma3: DENSE_TARGETS, phi3: PHI3_TARGETS };

export async function adapterBaseOf(ggufPath: string): Promise<AdapterBase> {
  const header = await readGgufHeader(ggufPath);
  const architecture = getString(header.metadata, "general.architecture") ?? "";
  return {
    architecture,
    blockCount: getNumber(header.metadata, `${architecture}.block_count`) ?? 0,
    shapes: new Map(header.tensors.map((t): [string, readonly number[]] => [t.name, t.dims])),
  };
}

/** Refuses every name but the adapter files of `format`, describing a bad one without echoing it whole. */
export function checkAdapterFileName(format: string, name: string): void {
  const allowed = format === "gguf" ? [ADAPTER_GGUF_FILE] : format === "peft" ? [PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE] : [];
  if (allowed.includes(name)) return;
  const why = name.includes("\0") ? "holds a NUL" : name.includes("/") || name.includes("\\") ? "is a path" : name === "." || name === ".." ? "names a directory" : name.length > 255 ? `is ${name.length} characters long` : "is not one of them";
  const shown = JSON.stringify(name.length > 60 ? `${name.slice(0, 60)}...` : name);
  throw new AdapterCheckError(`adapter file ${shown} (format ${JSON.stringify(format.slice(0, 20))}) ${why}; an adapter's files are ${ADAPTER_GGUF_FILE}, ${PEFT_CONFIG_FILE} and ${PEFT_WEIGHTS_FILE}`);
}

/** Both formats as a checkpoint keeps them: the GGUF always, PEFT's two files or none. */
export async function checkAdapterFiles(files: { gguf: Record<string, Uint8Array>; peft: Record<string, Uint8Array> }, base: AdapterBase): Promise<AdapterSummary> {
  for (const name of Object.keys(files.gguf)) checkAdapterFileName("gguf", name);
  for (const name of Object.keys(files.peft)) checkAdapterFileName("peft", name);
  const gguf = files.gguf[ADAPTER_GGUF_FILE];
  if (!gguf) throw new AdapterCheckError(`the adapter has no ${ADAPTER_GGUF_FILE}`);
  const summary = await checkLoraGguf(gguf, base);
  if (Object.keys(files.peft).length === 0) return summary;
  const peft = checkPeftFiles(files.peft, base);
  if (peft.rank !== summary.rank || Math.fround(peft.alpha) !== Math.fround(summary.alpha) || peft.targets.join() !== summary.targets.join()) {
    throw new AdapterCheckError(`the adapter's GGUF (rank ${summary.rank}, alpha ${summary.alpha}, ${summary.targets.length} tensors) and PEFT files (rank ${peft.rank}, alpha ${peft.alpha}, ${peft.targets.length} tensors) disagree`);
  }
  return summary;
}

/** adapter_config.json's rank and alpha, bounded (JSON's `1e309` is Infinity, not a rank). */
export function readPeftConfig(data: Uint8Array): { rank: number; alpha: number } {
  let config: unknown;
  try {
    config = JSON.parse(Buffer.from(data).toString("utf8"));
  } catch (error) {
    throw new AdapterCheckError(`${PEFT_CONFIG_FILE} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof config !== "object" || config === null || Array.isArray(config)) throw new AdapterCheckError(`${PEFT_CONFIG_FILE} is not a JSON object`);
  const { peft_type: type, r, lora_alpha: alpha } = config as Record<string, unknown>;
  if (type !== undefined && type !== "LORA") throw new AdapterCheckError(`${PEFT_CONFIG_FILE}: peft_type is ${JSON.stringify(type)}, not LORA`);
  return { rank: checkRank(r, `${PEFT_CONFIG_FILE}: r`), alpha: checkAlpha(alpha, `${PEFT_CONFIG_FILE}: lora_alpha`) };
}

/** PEFT's two files: the config's bounds, and every tensor a finite LoRA pair of a base projection. */
export function checkPeftFiles(files: Record<string, Uint8Array>, base: AdapterBase): AdapterSummary {
  for (const name of Object.keys(files)) checkAdapterFileName("peft", name);
  const configData = files[PEFT_CONFIG_FILE];
  const weights = files[PEFT_WEIGHTS_FILE];
  if (!configData || !weights) throw new AdapterCheckError(`a PEFT adapter needs ${PEFT_CONFIG_FILE} and ${PEFT_WEIGHTS_FILE}`);
  const { rank, alpha } = readPeftConfig(configData);
  const targets = targetsOf(base);
  const halves = new Map<string, { a?: number[]; b?: number[] }>();
  for (const tensor of readSafetensors(weights)) {
    const match = /^base_model\.model\.model\.layers\.(\d+)\.(\w+\.\w+)\.lora_([AB])\.weight$/.exec(tensor.name);
    const layer = match ? Number(match[1]) : -1;
    const kind = match ? targets[match[2]!] : undefined;
    if (!match || kind === undefined || layer >= base.blockCount) throw new AdapterCheckError(`PEFT tensor ${shortName(tensor.name)} is not a LoRA A/B weight of a ${base.architecture} projection (layers 0-${base.blockCount - 1}: ${Object.keys(targets).join(", ")})`);
    const baseName = `blk.${layer}.${kind}.weight`;
    const pair = halves.get(baseName) ?? {};
    pair[match[3] === "A" ? "a" : "b"] = tensor.shape;
    halves.set(baseName, pair);
    checkFinite(tensor.dtype, tensor.data, `PEFT tensor ${tensor.name}`);
  }
  for (const [baseName, { a, b }] of halves) {
    if (!a || !b) throw new AdapterCheckError(`PEFT adapter: ${baseName} has lora_${a ? "A" : "B"} without lora_${a ? "B" : "A"}`);
    const [nIn, nOut] = projectionDims(base, baseName);
    if (a.join() !== [rank, nIn].join() || b.join() !== [nOut, rank].join()) {
      throw new AdapterCheckError(`PEFT adapter: ${baseName} is [${nIn} -> ${nOut}] in the base model with r ${rank}, so lora_A must be [${rank}, ${nIn}] and lora_B [${nOut}, ${rank}]; they are [${a.join(", ")}] and [${b.join(", ")}]`);
    }
  }
  if (halves.size === 0) throw new AdapterCheckError("the PEFT adapter holds no LoRA tensors");
  return { rank, alpha, targets: [...halves.keys()].sort() };
}

/** llama.cpp's LoRA GGUF: header facts against the base, each pair's dims and values. */
export async function checkLoraGguf(data: Uint8Array, base: AdapterBase): Promise<AdapterSummary> {
  // The GGUF reader works on files (it never loads a model whole): a scratch copy.
  const dir = await mkdtemp(join(tmpdir(), "srl-adapter-check-"));
  try {
    const path = join(dir, ADAPTER_GGUF_FILE);
    await writeFile(path, data);
    let reader: GgufReader;
    try {
      reader = await GgufReader.open(path);
    } catch (error) {
      throw new AdapterCheckError(`${ADAPTER_GGUF_FILE} is not a readable GGUF: ${(error instanceof Error ? error.message : String(error)).replace(`${path}: `, "")}`);
    }
    try {
      return await checkGgufTensors(reader, base);
    } finally {
      await reader.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function checkGgufTensors(reader: GgufReader, base: AdapterBase): Promise<AdapterSummary> {
  const meta = reader.metadata;
  if (getString(meta, "general.type") !== "adapter" || getString(meta, "adapter.type") !== "lora") throw new AdapterCheckError(`${ADAPTER_GGUF_FILE} is not a LoRA adapter (general.type adapter, adapter.type lora)`);
  const architecture = getString(meta, "general.architecture");
  if (architecture !== base.architecture) throw new AdapterCheckError(`${ADAPTER_GGUF_FILE} is for architecture ${JSON.stringify(architecture ?? null)}, the base model is ${base.architecture}`);
  const alpha = checkAlpha(getNumber(meta, "adapter.lora.alpha"), `${ADAPTER_GGUF_FILE}: adapter.lora.alpha`);
  const expected = new Set(Object.values(targetsOf(base)));
  const pairs = new Map<string, { a?: readonly number[]; b?: readonly number[] }>();
  let rank: number | undefined;
  for (const tensor of reader.tensors) {
    const match = /^(blk\.(\d+)\.(\w+)\.weight)\.lora_([ab])$/.exec(tensor.name);
    if (!match || !expected.has(match[3]!) || Number(match[2]) >= base.blockCount || !base.shapes.has(match[1]!)) {
      throw new AdapterCheckError(`${ADAPTER_GGUF_FILE} tensor ${shortName(tensor.name)} is not the LoRA A/B of a ${base.architecture} projection of the base model (blocks 0-${base.blockCount - 1}: ${[...expected].join(", ")})`);
    }
    if (tensor.type !== "F32" && tensor.type !== "F16" && tensor.type !== "BF16") throw new AdapterCheckError(`${ADAPTER_GGUF_FILE} tensor ${tensor.name} is ${tensor.type}; LoRA tensors are F32, F16 or BF16`);
    if (tensor.dims.length !== 2) throw new AdapterCheckError(`${ADAPTER_GGUF_FILE} tensor ${tensor.name} has ${tensor.dims.length} dims, not 2`);
    const pair = pairs.get(match[1]!) ?? {};
    const isA = match[4] === "a";
    if ((isA ? pair.a : pair.b) !== undefined) throw new AdapterCheckError(`${ADAPTER_GGUF_FILE} holds ${tensor.name} twice`);
    pair[isA ? "a" : "b"] = tensor.dims;
    pairs.set(match[1]!, pair);
    // ggml dims: A is [n_in, rank], B is [rank, n_out].
    const tensorRank = checkRank(isA ? tensor.dims[1] : tensor.dims[0], `${ADAPTER_GGUF_FILE} tensor ${tensor.name}: rank`);
    if (rank !== undefined && tensorRank !== rank) throw new AdapterCheckError(`${ADAPTER_GGUF_FILE}: tensor ${tensor.name} has rank ${tensorRank}, others ${rank}`);
    rank = tensorRank;
    checkFinite(tensor.type, await reader.readTensorBytes(tensor.name), `${ADAPTER_GGUF_FILE} tensor ${tensor.name}`);
  }
  if (rank === undefined) throw new AdapterCheckError(`${ADAPTER_GGUF_FILE} holds no LoRA tensors`);
  for (const [baseName, { a, b }] of pairs) {
    if (!a || !b) throw new AdapterCheckError(`${ADAPTER_GGUF_FILE}: ${baseName} has lora_${a ? "a" : "b"} without lora_${a ? "b" : "a"}`);
    const [nIn, nOut] = projectionDims(base, baseName);
    if (a[0] !== nIn || b[1] !== nOut) {
      throw new AdapterCheckError(`${ADAPTER_GGUF_FILE}: ${baseName} is [${nIn} -> ${nOut}] in the base model, so lora_a must be [${nIn}, ${rank}] and lora_b [${rank}, ${nOut}] (ggml dims); they are [${a.join(", ")}] and [${b.join(", ")}]`);
    }
  }
  return { rank, alpha, targets: [...pairs.keys()].sort() };
}

function targetsOf(base: AdapterBase): Record<string, string> {
  const targets = TARGETS_BY_ARCHITECTURE[base.architecture];
  if (!targets || base.blockCount < 1) throw new AdapterCheckError(`the base model (architecture ${JSON.stringify(base.architecture)}, ${base.blockCount} blocks) is not one LoRA adapters are kept for (${Object.keys(TARGETS_BY_ARCHITECTURE).join(", ")})`);
  return targets;
}

function projectionDims(base: AdapterBase, baseName: string): [number, number] {
  const dims = base.shapes.get(baseName);
  if (!dims || dims.length !== 2) throw new AdapterCheckError(`the base model has no weight matrix ${baseName}`);
  return [dims[0]!, dims[1]!];
}

function checkRank(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_LORA_RANK) throw new AdapterCheckError(`${what} must be an integer from 1 to ${MAX_LORA_RANK}, got ${describe(value)}`);
  return value;
}

function checkAlpha(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > MAX_LORA_ALPHA) throw new AdapterCheckError(`${what} must be a number above 0 and at most ${MAX_LORA_ALPHA}, got ${describe(value)}`);
  return value;
}

function describe(value: unknown): string {
  return typeof value === "number" ? String(value) : value === undefined ? "nothing" : JSON.stringify(value).slice(0, 40);
}

function shortName(name: string): string {
  return JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}...` : name);
}

/** Every value finite, read from the raw bits (exponent all ones: Inf or NaN). */
function checkFinite(type: string, bytes: Uint8Array, what: string): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const [size, mask] = type === "F32" ? [4, 0x7f800000] : type === "F16" ? [2, 0x7c00] : type === "BF16" ? [2, 0x7f80] : [0, 0];
  if (size === 0) throw new AdapterCheckError(`${what} is ${type}; LoRA tensors are F32, F16 or BF16`);
  for (let offset = 0; offset + size <= bytes.byteLength; offset += size) {
    const bits = size === 4 ? view.getUint32(offset, true) : view.getUint16(offset, true);
    if ((bits & mask) === mask) {
      const index = offset / size;
      throw new AdapterCheckError(`${what} holds ${(bits & (size === 4 ? 0x7fffff : type === "F16" ? 0x3ff : 0x7f)) === 0 ? "an infinite value" : "NaN"} (at element ${index}); an adapter's values must be finite`);
    }
  }
}

interface SafetensorsTensor {
  name: string;
  dtype: string;
  shape: number[];
  data: Uint8Array;
}

/** The tensors of a safetensors file (8-byte LE header size, JSON header, data), bounds checked. */
function readSafetensors(file: Uint8Array): SafetensorsTensor[] {
  const fail = (why: string): never => {
    throw new AdapterCheckError(`${PEFT_WEIGHTS_FILE} is not a valid safetensors file: ${why}`);
  };
  if (file.byteLength < 8) fail("shorter than its header size");
  const headerBytes = new DataView(file.buffer, file.byteOffset, file.byteLength).getBigUint64(0, true);
  if (headerBytes > BigInt(Math.min(file.byteLength - 8, MAX_SAFETENSORS_HEADER_BYTES))) fail(`a header of ${headerBytes} bytes`);
  const dataStart = 8 + Number(headerBytes);
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(file.buffer, file.byteOffset + 8, Number(headerBytes)).toString("utf8"));
  } catch {
    fail("its header is not JSON");
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) return fail("its header is not a JSON object");
  const sizes: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };
  const tensors: SafetensorsTensor[] = [];
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") continue;
    const { dtype, shape, data_offsets: offsets } = (entry ?? {}) as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof dtype !== "string" || sizes[dtype] === undefined) fail(`tensor ${shortName(name)} has dtype ${describe(dtype)} (F32, F16 or BF16 expected)`);
    if (!Array.isArray(shape) || shape.length !== 2 || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) fail(`tensor ${shortName(name)} is not a matrix (shape ${describe(shape)})`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && (o as number) >= 0)) fail(`tensor ${shortName(name)} has bad data_offsets`);
    const [begin, end] = offsets as [number, number];
    const dims = shape as number[];
    if (end < begin || dataStart + end > file.byteLength || end - begin !== dims[0]! * dims[1]! * sizes[dtype as string]!) fail(`tensor ${shortName(name)}'s data_offsets [${begin}, ${end}] do not hold its ${dims.join(" x ")} ${String(dtype)} values inside the file`);
    tensors.push({ name, dtype: dtype as string, shape: dims, data: file.subarray(dataStart + begin, dataStart + end) });
  }
  return tensors;
}
