// GGUF writer/reader round trips: every metadata value type, every tensor type, alignment,
// lazy tensor production, the Q8_0 error bound, and clear errors for what is not supported (the
// other quantised types' formats have their own tests: q4.test.ts, k-quants.test.ts, gguf-py.test.ts).
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readGgufFileInfo } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { f16BitsToF32, f32ToF16Bits } from "./half.js";
import { dequantizeQ8_0, quantizeQ8_0 } from "./q8_0.js";
import { GgufReader, readGgufHeader } from "./reader.js";
import { decodeTensor, encodeTensor } from "./tensor-codec.js";
import { GGML_TYPES, type GgufMetadata } from "./types.js";
import { gv } from "./values.js";
import { writeGguf } from "./writer.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gguf-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function ramp(n: number, scale = 1): Float32Array {
  // Deterministic, sign-alternating, varied magnitudes.
  return Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.7 + 0.3) * scale * (1 + (i % 7)));
}

const everyValueType: GgufMetadata = new Map([
  ["general.architecture", gv.str("llama")],
  ["t.u8", gv.u8(255)],
  ["t.i8", gv.i8(-128)],
  ["t.u16", gv.u16(65535)],
  ["t.i16", gv.i16(-32768)],
  ["t.u32", gv.u32(0xffffffff)],
  ["t.i32", gv.i32(-2147483648)],
  ["t.u64", gv.u64(18446744073709551615n)],
  ["t.i64", gv.i64(-9223372036854775808n)],
  ["t.f32", gv.f32(Math.fround(0.1))],
  ["t.f64", gv.f64(0.1)],
  ["t.bool.true", gv.bool(true)],
  ["t.bool.false", gv.bool(false)],
  ["t.string", gv.str("héllo ✓ <|im_end|>\n")],
  ["t.string.empty", gv.str("")],
  ["t.arr.u8", gv.numbers("u8", [0, 1, 255])],
  ["t.arr.i8", gv.numbers("i8", [-1, 0, 127])],
  ["t.arr.u16", gv.numbers("u16", [0, 65535])],
  ["t.arr.i16", gv.numbers("i16", [-32768, 32767])],
  ["t.arr.u32", gv.numbers("u32", [1, 2, 3])],
  ["t.arr.i32", gv.numbers("i32", [-1, 1, 3])],
  ["t.arr.u64", gv.bigints("u64", [0n, 2n ** 63n])],
  ["t.arr.i64", gv.bigints("i64", [-(2n ** 40n), 5n])],
  ["t.arr.f32", gv.numbers("f32", [0.5, -1.25, Math.fround(3.3)])],
  ["t.arr.f64", gv.numbers("f64", [Math.PI, -0])],
  ["t.arr.bool", gv.bools([true, false, true])],
  ["t.arr.string", gv.strings(["a", "Ġb", "", "<|im_start|>"])],
  ["t.arr.empty", gv.strings([])],
]);

describe("GGUF writer and reader", () => {
  it("round-trips every metadata value type exactly", async () => {
    const path = join(dir, "values.gguf");
    await writeGguf(path, everyValueType, [{ name: "x", dims: [4], type: "F32", data: new Float32Array([1, 2, 3, 4]) }]);
    const header = await readGgufHeader(path);
    expect(header.version).toBe(3);
    for (const [key, value] of everyValueType) expect(header.metadata.get(key), key).toEqual(value);
    expect(header.metadata.get("general.alignment")).toEqual(gv.u32(32));
  });

  it("writes files node-llama-cpp's own GGUF parser reads the same way", async () => {
    const path = join(dir, "values-nlc.gguf");
    await writeGguf(path, everyValueType, [
      { name: "a", dims: [64, 2], type: "Q8_0", data: ramp(128) },
      { name: "b", dims: [3], type: "F16", data: new Float32Array([1, 2, 3]) },
    ]);
    const info = await readGgufFileInfo(path, { logWarnings: false });
    const flat = info.metadata as unknown as { t: Record<string, unknown> };
    expect(flat.t.u32).toBe(0xffffffff);
    expect(flat.t.string).toBe("héllo ✓ <|im_end|>\n");
    expect(flat.t.arr).toMatchObject({ string: ["a", "Ġb", "", "<|im_start|>"], bool: [true, false, true] });
    expect(info.tensorInfo?.map((t) => [t.name, t.dimensions.map(Number), t.ggmlType])).toEqual([
      ["a", [64, 2], GGML_TYPES.Q8_0.id],
      ["b", [3], GGML_TYPES.F16.id],
    ]);
  });

  it("round-trips F32 exactly and F16 / BF16 within their precision", async () => {
    const path = join(dir, "tensors.gguf");
    const values = ramp(96, 0.37);
    const meta: GgufMetadata = new Map([["general.architecture", gv.str("test")]]);
    await writeGguf(path, meta, [
      { name: "f32", dims: [32, 3], type: "F32", data: values },
      { name: "f16", dims: [32, 3], type: "F16", data: values },
      { name: "bf16", dims: [96], type: "BF16", data: values },
      { name: "f16.exact", dims: [4], type: "F16", data: new Float32Array([0.5, -2, 65504, 2 ** -24]) },
    ]);
    const reader = await GgufReader.open(path);
    try {
      expect(await reader.readTensor("f32")).toEqual(values);
      const f16 = await reader.readTensor("f16");
      const bf16 = await reader.readTensor("bf16");
      for (let i = 0; i < values.length; i++) {
        const v = values[i]!;
        expect(Math.abs(f16[i]! - v)).toBeLessThanOrEqual(Math.abs(v) * 2 ** -11 + 2 ** -25);
        expect(Math.abs(bf16[i]! - v)).toBeLessThanOrEqual(Math.abs(v) * 2 ** -8);
      }
      expect([...(await reader.readTensor("f16.exact"))]).toEqual([0.5, -2, 65504, 2 ** -24]);
      expect(reader.tensor("f32")).toMatchObject({ dims: [32, 3], type: "F32", elements: 96, byteSize: 384 });
    } finally {
      await reader.close();
    }
  });

  it("quantises Q8_0 in 34-byte blocks within half a step (plus the f16 scale's rounding)", async () => {
    const path = join(dir, "q8.gguf");
    const values = ramp(32 * 8, 0.05);
    values[40] = 0; // a block with a zero in it, and
    values.fill(0, 64, 96); // an all-zero block (scale 0)
    await writeGguf(path, new Map(), [{ name: "q", dims: [64, 4], type: "Q8_0", data: values }]);
    const reader = await GgufReader.open(path);
    try {
      expect(reader.tensor("q")!.byteSize).toBe(8 * 34);
      const back = await reader.readTensor("q");
      expect(back).toEqual(dequantizeQ8_0(quantizeQ8_0(values), values.length));
      for (let b = 0; b < 8; b++) {
        const block = values.subarray(b * 32, b * 32 + 32);
        const step = Math.max(...block.map(Math.abs)) / 127;
        for (let j = 0; j < 32; j++) {
          // |x - q·d'| <= d/2 + 127·|d - d'|, with |d - d'| <= d·2^-11 for the f16 scale d'.
          expect(Math.abs(back[b * 32 + j]! - block[j]!)).toBeLessThanOrEqual(step * (0.5 + 127 * 2 ** -11) + 1e-12);
        }
      }
      expect([...back.subarray(64, 96)].every((v) => v === 0)).toBe(true);
    } finally {
      await reader.close();
    }
  });

  it("writes and reads Q4_0, Q4_1, Q4_K, Q5_K and Q6_K tensors in their block sizes", async () => {
    const path = join(dir, "q4-k.gguf");
    const types = ["Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"] as const;
    const values = ramp(512 * 2, 0.1);
    await writeGguf(path, new Map(), types.map((type) => ({ name: type, dims: [512, 2], type, data: values })));
    const reader = await GgufReader.open(path);
    try {
      for (const type of types) {
        expect(reader.tensor(type)).toMatchObject({ type, byteSize: (1024 / GGML_TYPES[type].block) * GGML_TYPES[type].bytes });
        expect(await reader.readTensor(type), type).toEqual(decodeTensor(type, encodeTensor(type, values), values.length));
      }
    } finally {
      await reader.close();
    }
    const info = await readGgufFileInfo(path, { logWarnings: false });
    expect(info.tensorInfo?.map((t) => t.ggmlType)).toEqual(types.map((t) => GGML_TYPES[t].id));
    await expect(writeGguf(path, new Map(), [{ name: "k", dims: [128], type: "Q4_K", data: ramp(128) }])).rejects.toThrow(/multiple of the Q4_K block size 256/);
  });

  it("aligns the data section and every tensor to general.alignment", async () => {
    for (const alignment of [32, 64]) {
      const path = join(dir, `align-${alignment}.gguf`);
      const meta: GgufMetadata = new Map([["general.alignment", gv.u32(alignment)]]);
      const tensors = [3, 5, 64, 7].map((n, i) => ({ name: `t${i}`, dims: [n], type: "F32" as const, data: ramp(n) }));
      const written = await writeGguf(path, meta, tensors);
      const reader = await GgufReader.open(path);
      try {
        expect(reader.header.alignment).toBe(alignment);
        expect(reader.header.dataOffset % alignment).toBe(0);
        for (const t of reader.tensors) expect(t.fileOffset % alignment).toBe(0);
        for (const [i, n] of [3, 5, 64, 7].entries()) expect(await reader.readTensor(`t${i}`)).toEqual(ramp(n));
        expect((await readFile(path)).length).toBe(written.bytes);
      } finally {
        await reader.close();
      }
    }
  });

  it("produces lazily given tensors one at a time, in order", async () => {
    const calls: string[] = [];
    const lazy = (name: string, n: number) => ({
      name,
      dims: [n],
      type: "F32" as const,
      data: () => {
        calls.push(name);
        return ramp(n);
      },
    });
    await writeGguf(join(dir, "lazy.gguf"), new Map(), [lazy("a", 8), lazy("b", 16)]);
    expect(calls).toEqual(["a", "b"]);
  });

  it("refuses bad input with messages that say what is wrong", async () => {
    const meta: GgufMetadata = new Map();
    const path = join(dir, "bad.gguf");
    await expect(writeGguf(path, meta, [{ name: "q", dims: [48], type: "Q8_0", data: ramp(48) }])).rejects.toThrow(/multiple of the Q8_0 block size 32/);
    await expect(writeGguf(path, meta, [{ name: "x", dims: [2, 2], type: "F32", data: ramp(3) }])).rejects.toThrow(/3 values given, dims \[2, 2\] need 4/);
    await expect(writeGguf(path, new Map([["k", gv.u8(300)]]), [])).rejects.toThrow(/metadata k: 300 is not a valid u8/);
    await writeFile(path, "not a gguf file at all, just text");
    await expect(GgufReader.open(path)).rejects.toThrow(/bad magic/);
  });

  it("names the type of a tensor it cannot decode", async () => {
    const path = join(dir, "q2k.gguf");
    const name = "blk.0.attn_q.weight";
    await writeGguf(path, new Map(), [{ name, dims: [256], type: "F32", data: ramp(256) }]);
    // Re-label the tensor as Q2_K (256 values = one 84-byte block, inside the 1 KiB written).
    const bytes = await readFile(path);
    const typeAt = bytes.indexOf(Buffer.from(name)) + name.length + 4 + 8;
    expect(bytes.readUInt32LE(typeAt)).toBe(GGML_TYPES.F32.id);
    bytes.writeUInt32LE(GGML_TYPES.Q2_K.id, typeAt);
    await writeFile(path, bytes);

    const reader = await GgufReader.open(path);
    try {
      expect(reader.tensor(name)).toMatchObject({ type: "Q2_K", byteSize: 84 });
      await expect(reader.readTensor(name)).rejects.toThrow(`tensor ${name} has type Q2_K, which this reader does not support`);
      expect((await reader.readTensorBytes(name)).length).toBe(84);
      await expect(reader.readTensor("nope")).rejects.toThrow(/has no tensor nope/);
    } finally {
      await reader.close();
    }
  });
});

describe("half-precision conversions", () => {
  it("rounds to nearest even and handles subnormals, overflow and NaN", () => {
    expect(f32ToF16Bits(1)).toBe(0x3c00);
    expect(f32ToF16Bits(-2)).toBe(0xc000);
    expect(f32ToF16Bits(65504)).toBe(0x7bff);
    expect(f32ToF16Bits(65520)).toBe(0x7c00); // rounds up to infinity
    expect(f32ToF16Bits(2 ** -24)).toBe(0x0001);
    expect(f32ToF16Bits(2 ** -25)).toBe(0x0000); // a tie, to even (zero)
    expect(f32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00); // a tie, to even
    expect(f32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(Number.isNaN(f16BitsToF32(f32ToF16Bits(NaN)))).toBe(true);
    for (let h = 0; h < 0x7c00; h += 7) expect(f32ToF16Bits(f16BitsToF32(h))).toBe(h);
  });
});
