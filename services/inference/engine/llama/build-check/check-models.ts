// The models a llama.cpp build is checked on: a small generated model of each weight type that
// users' GGUF files use and llama.cpp has separate kernels for (f16, q8_0, q4_0, q4_1 and the
// K-quants of Q4_K_M / Q5_K_M files; the AMX kernels cover all of these), sized so that every
// kernel path applies (rows of 256 for the K-quants, outputs in multiples of 32), and the real
// SmolLM2-135M-Instruct Q4_1 where the install fetched it.
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { makeTinyModel, type TinyModelType } from "../../../../weights/index.js";

export interface CheckModel {
  name: string;
  path: string;
}

export const CHECK_TYPES: readonly TinyModelType[] = ["f16", "q8_0", "q4_0", "q4_1", "q4_k", "q5_k", "q6_k"];
/** Bump when the shape below changes, so cached files are written again. */
const SHAPE_VERSION = 1;

/** Writes the generated models into `dir` where missing (same bytes every time) and lists them with `extra`. */
export async function ensureCheckModels(dir: string, extra: CheckModel[] = []): Promise<CheckModel[]> {
  await mkdir(dir, { recursive: true });
  const models: CheckModel[] = [];
  for (const type of CHECK_TYPES) {
    const path = join(dir, `check-v${SHAPE_VERSION}-${type}.gguf`);
    if (!existsSync(path)) {
      const temporary = `${path}.${process.pid}.tmp`;
      try {
        await makeTinyModel({ path: temporary, name: `check-${type}`, seed: 11, layers: 2, embedding: 256, heads: 4, kvHeads: 2, ff: 512, contextLength: 512, type });
        await rename(temporary, path);
      } finally {
        await rm(temporary, { force: true });
      }
    }
    models.push({ name: type, path });
  }
  return [...models, ...extra.filter((model) => existsSync(model.path))];
}
