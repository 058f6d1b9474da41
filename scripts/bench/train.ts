// `npm run bench:train`: one trainer optimizer step (SFT loss, forward + backward + clip + AdamW,
// default LoRA r8/α16 on all projections) at two model sizes, each in its own process so peak
// memory is its own. Prints first-step time (includes jax-js compilation), steady step time,
// tokens/s and peak memory. BENCH_ROWS x BENCH_SEQ tokens per step (default 8 x 128).
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { BUILT_IN_PRESETS, makeTinyModel, type TinyModelOptions } from "../../services/weights/tiny-model.js";

// jax-js keeps its wasm heap private: count it by watching WebAssembly.Memory construction, which
// must happen before jax-js loads (hence the dynamic imports in measure()).
// (tsconfig has no DOM lib, so the few WebAssembly types needed are spelled out.)
type WasmMemory = { buffer: ArrayBuffer };
const wasm = (globalThis as unknown as { WebAssembly: { Memory: new (...args: unknown[]) => WasmMemory } }).WebAssembly;
const wasmMemories: WasmMemory[] = [];
wasm.Memory = new Proxy(wasm.Memory, {
  construct(target, args) {
    const memory = Reflect.construct(target, args) as WasmMemory;
    wasmMemories.push(memory);
    return memory;
  },
});
const wasmBytes = () => wasmMemories.reduce((n, m) => n + m.buffer.byteLength, 0);

const SIZES: Record<string, Omit<TinyModelOptions, "path">> = {
  "tiny-chat (4L d128)": BUILT_IN_PRESETS["tiny-chat"],
  "4L d256": { seed: 2, layers: 4, embedding: 256, heads: 4, kvHeads: 2, ff: 768, contextLength: 2048, type: "f32" },
};
const ROWS = Number(process.env.BENCH_ROWS ?? 8);
const SEQ = Number(process.env.BENCH_SEQ ?? 128);
const STEPS = Number(process.env.BENCH_STEPS ?? 3);

interface Measured {
  size: string;
  params: number;
  loraParams: number;
  firstStepS: number;
  stepS: number;
  tokensPerS: number;
  peakRssMb: number;
  wasmHeapMb: number;
}

async function measure(size: string): Promise<Measured> {
  const preset = SIZES[size];
  if (!preset) throw new Error(`unknown size ${size}`);
  const { numpy: np } = await import("@jax-js/jax");
  const { CausalLm } = await import("../../services/training/trainer/model/causal-lm.js");
  const { initLora, loraParameterCount } = await import("../../services/training/trainer/model/lora.js");
  const { TrainingSession } = await import("../../services/training/trainer/runner/session.js");
  const { SFT_LOSS } = await import("../../services/training/trainer/sft/loss.js");
  const dir = await mkdtemp(join(tmpdir(), "bench-train-"));
  try {
    const path = join(dir, "model.gguf");
    const info = await makeTinyModel({ ...preset, path });
    const lm = await CausalLm.load(path);
    const lora = initLora(lm.base);
    const session = new TrainingSession(lm, lora, 0);
    const rows = Array.from({ length: ROWS }, (_, r) => Array.from({ length: SEQ }, (_, t) => (r * 131 + t * 17) % info.vocabSize));
    const mask = new Float32Array(ROWS * SEQ).map((_, i) => (i % SEQ < SEQ - 1 ? 1 : 0));
    const labels = ROWS * (SEQ - 1);
    const micro = [{ build: () => ({ inputs: lm.inputs(rows, SEQ), data: { mask: np.array(mask).reshape([ROWS, SEQ]), invCount: np.array(1 / labels) } }) }];
    const times: number[] = [];
    for (let i = 0; i <= STEPS; i++) {
      const t0 = performance.now();
      await session.step(SFT_LOSS, micro, 1e-4, 1.0);
      times.push((performance.now() - t0) / 1000);
    }
    const steady = times.slice(1).sort((a, b) => a - b)[Math.floor((times.length - 1) / 2)]!;
    return {
      size,
      params: info.parameters,
      loraParams: loraParameterCount(lora),
      firstStepS: times[0]!,
      stepS: steady,
      tokensPerS: (ROWS * SEQ) / steady,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      // Wasm memory only grows, so its size now is its peak.
      wasmHeapMb: wasmBytes() / 2 ** 20,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const one = process.argv[2] === "--one" ? process.argv[3] : undefined;
if (one) {
  process.stdout.write(JSON.stringify(await measure(one)));
} else {
  const run = promisify(execFile);
  const results: Measured[] = [];
  for (const size of Object.keys(SIZES)) {
    const { stdout } = await run(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--one", size], { maxBuffer: 1 << 20 });
    results.push(JSON.parse(stdout) as Measured);
  }
  console.log(`trainer step: ${ROWS} x ${SEQ} tokens, LoRA r8 a16 on q,k,v,o,gate,up,down, jax-js wasm (1 thread)`);
  console.table(
    results.map((r) => ({
      model: r.size,
      "params (M)": +(r.params / 1e6).toFixed(2),
      "LoRA params (k)": +(r.loraParams / 1e3).toFixed(1),
      "first step s (compile)": +r.firstStepS.toFixed(2),
      "step s": +r.stepS.toFixed(3),
      "tokens/s": Math.round(r.tokensPerS),
      "peak RSS MB": Math.round(r.peakRssMb),
      "wasm heap MB": Math.round(r.wasmHeapMb),
    })),
  );
}
