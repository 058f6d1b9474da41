// The AMX patch (patches/llama.cpp/amx-tile-config.diff) where it matters: in machine code. GCC 12's
// _tile_loadconfig declares only 8 bytes of its operand as read, so a tile configuration built on
// the stack lost its tile shapes as dead stores, and the first tile instruction raised SIGILL on
// every AMX CPU. Compiled here for Sapphire Rapids (AMX) whatever this machine's CPU: the patched
// source's ldtilecfg must read the whole configuration, with its tile shapes, from .rodata.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "../../../../..");
const BUNDLE = join(repoRoot, "node_modules/node-llama-cpp/llama/gitRelease.bundle");
const PATCH = join(repoRoot, "patches/llama.cpp/amx-tile-config.diff");

/** The 64-byte configuration ggml's AMX kernels need: palette 1; tiles 0-7 as mmq.cpp lays them out. */
function expectedConfig(): Buffer {
  const config = Buffer.alloc(64);
  config[0] = 1;
  [64, 64, 32, 32, 64, 64, 64, 64].forEach((colsb, tile) => config.writeUInt16LE(colsb, 16 + 2 * tile));
  [8, 8, 16, 16, 16, 16, 16, 16].forEach((rows, tile) => (config[48 + tile] = rows));
  return config;
}

/** Compiles mmq.cpp for an AMX CPU; returns where its ldtilecfg reads: ".rodata+N" or a register-based address. */
async function ldtilecfgOperand(source: string, object: string): Promise<{ operand: string; rodata: Buffer }> {
  await run("g++", ["-std=c++17", "-O3", "-march=sapphirerapids", "-DNDEBUG", "-I", "ggml/include", "-I", "ggml/src", "-I", "ggml/src/ggml-cpu", "-c", "ggml/src/ggml-cpu/amx/mmq.cpp", "-o", object], { cwd: source });
  const { stdout } = await run("objdump", ["-dr", "--no-show-raw-insn", object], { maxBuffer: 1 << 28 });
  const lines = stdout.split("\n");
  const at = lines.findIndex((line) => /\bldtilecfg\b/.test(line));
  expect(at, "mmq.cpp has no ldtilecfg").toBeGreaterThanOrEqual(0);
  const relocation = /R_X86_64_PC32\s+\.rodata\+0x([0-9a-f]+)/.exec(lines[at + 1] ?? "");
  await run("objcopy", ["-O", "binary", "--only-section=.rodata", object, `${object}.rodata`]);
  const rodata = await readFile(`${object}.rodata`);
  // A PC-relative displacement is taken from the end of its 4 bytes: the target is addend + 4.
  return { operand: relocation ? `.rodata+${parseInt(relocation[1]!, 16) + 4}` : (lines[at] ?? "").trim(), rodata };
}

describe("the llama.cpp AMX patch", () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "srl-amx-patch-"));
    await run("git", ["clone", "-q", BUNDLE, join(work, "patched")]);
    await run("git", ["clone", "-q", BUNDLE, join(work, "unpatched")]);
    await run("git", ["-C", join(work, "patched"), "apply", PATCH]);
  }, 120_000);
  afterAll(() => rm(work, { recursive: true, force: true }));

  it("makes ldtilecfg load the whole tile configuration from .rodata", async () => {
    const { operand, rodata } = await ldtilecfgOperand(join(work, "patched"), join(work, "patched.o"));
    const match = /^\.rodata\+(\d+)$/.exec(operand);
    expect(match, `ldtilecfg reads ${operand}, not a constant`).not.toBeNull();
    expect(rodata.subarray(Number(match![1]), Number(match![1]) + 64).equals(expectedConfig())).toBe(true);
  }, 120_000);

  it("is needed: the bundled source builds the configuration on the stack", async () => {
    const { operand } = await ldtilecfgOperand(join(work, "unpatched"), join(work, "unpatched.o"));
    expect(operand).toMatch(/ldtilecfg\s+-?0x[0-9a-f]+\(%rsp\)/);
  }, 120_000);
});
