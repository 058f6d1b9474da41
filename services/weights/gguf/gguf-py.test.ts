// The quantised types against gguf-py (the `gguf` package of the trainer's Python environment,
// numpy ports of ggml's dequantize_row_* and quantize_row_*_ref): gguf-py decodes the bytes our
// quantisers write to the same f32 values our decoders give (1 ulp allowed, none seen), and its
// Q4_0 / Q4_1 quantisers write our bytes.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeTensor, encodeTensor } from "./tensor-codec.js";
import { mixedBlocks } from "./quant-test-data.js";

/** As the trainer: TRAINER_PYTHON, else the environment the install step links at .cache/trainer-venv. */
const PYTHON = process.env.TRAINER_PYTHON ?? fileURLToPath(new URL("../../../.cache/trainer-venv/bin/python", import.meta.url));
const TYPES = ["Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"] as const;
/** gguf-py quantises these (the K-quants it only decodes). */
const PY_QUANTISED = ["Q4_0", "Q4_1"];

// argv: folder, type names. Reads folder/x.f32 and folder/<type>.bin, writes <type>.f32 (decoded)
// and, for the types it can quantise, <type>.ref (its quantisation of x).
const SCRIPT = `
import sys
import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize
folder = sys.argv[1]
x = np.fromfile(f"{folder}/x.f32", dtype=np.float32)
for name in sys.argv[2:]:
    qtype = GGMLQuantizationType[name]
    data = np.fromfile(f"{folder}/{name}.bin", dtype=np.uint8)
    dequantize(data, qtype).astype(np.float32).tofile(f"{folder}/{name}.f32")
    if name in (${PY_QUANTISED.map((t) => `"${t}"`).join(", ")}):
        quantize(x, qtype).tofile(f"{folder}/{name}.ref")
`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gguf-py-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function runGgufPy(args: string[]): Promise<void> {
  if (!existsSync(PYTHON)) {
    throw new Error(`${PYTHON} is missing: the install step (scripts/install-trainer.sh) creates the trainer's Python environment with gguf-py; run it, or set TRAINER_PYTHON`);
  }
  try {
    await promisify(execFile)(PYTHON, ["-c", SCRIPT, ...args], { timeout: 60_000 });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new Error(`gguf-py failed (${PYTHON}): ${err instanceof Error ? err.message : String(err)}\n${stderr}`, { cause: err });
  }
}

/** Distance in f32 steps (units in the last place); +0 and -0 are the same value. */
function ulps(a: number, b: number): number {
  if (a === b || (Number.isNaN(a) && Number.isNaN(b))) return 0;
  const bits = new Int32Array(Float32Array.of(a, b).buffer);
  return Math.sign(a) === Math.sign(b) ? Math.abs(bits[0]! - bits[1]!) : Infinity;
}

const asF32 = (bytes: Buffer) => new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));

describe("quantised types against gguf-py", () => {
  it("decode to what ggml's dequantisation gives, and Q4_0 / Q4_1 quantise to ggml's bytes", async () => {
    const x = mixedBlocks(7, 9 * 8, 256);
    await writeFile(join(dir, "x.f32"), x);
    const encoded = new Map(TYPES.map((t) => [t, encodeTensor(t, x)]));
    for (const [type, bytes] of encoded) await writeFile(join(dir, `${type}.bin`), bytes);
    await runGgufPy([dir, ...TYPES]);

    for (const [type, bytes] of encoded) {
      const ours = decodeTensor(type, bytes, x.length);
      const theirs = asF32(await readFile(join(dir, `${type}.f32`)));
      expect(theirs.length, type).toBe(x.length);
      let worst = 0;
      for (let i = 0; i < x.length; i++) worst = Math.max(worst, ulps(ours[i]!, theirs[i]!));
      expect(worst, `${type}: largest difference in ulps`).toBeLessThanOrEqual(1);
      if (PY_QUANTISED.includes(type)) expect(Buffer.from(bytes).equals(await readFile(join(dir, `${type}.ref`))), `${type} bytes`).toBe(true);
    }
  });
});
