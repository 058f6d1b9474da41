// `npm run make-model -- --out PATH [--arch NAME] [--seed N] [--layers N] [--embedding N]
// [--heads N] [--kv-heads N] [--head-dim N] [--ff N] [--context N] [--type TYPE] [--tied]
// [--sliding-window N]`: writes a random tiny GGUF (defaults: the built-in tiny-chat preset, a
// llama) and says what it wrote.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { BUILT_IN_PRESETS, makeTinyModel, TINY_ARCHITECTURES, TINY_MODEL_TYPES, type TinyArchitecture, type TinyModelType } from "../tiny-model.js";

const usage = `usage: npm run make-model -- --out PATH [--arch ${TINY_ARCHITECTURES.join("|")}] [--seed N]
       [--layers N] [--embedding N] [--heads N] [--kv-heads N] [--head-dim N] [--ff N] [--context N]
       [--type ${TINY_MODEL_TYPES.join("|")}] [--tied] [--sliding-window N] [--name NAME]
defaults are the built-in tiny-chat preset (llama, f32); --head-dim only for qwen3 (default 128) and
gemma2/gemma3 (default 256), --sliding-window only for gemma2/gemma3 (default 4096); the quantised
types need embedding, ff and heads x head size in multiples of 32 (q8_0, q4_0, q4_1) or 256 (q4_k,
q5_k, q6_k: e.g. --embedding 256 --ff 512)`;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: "string" },
      arch: { type: "string" },
      seed: { type: "string" },
      layers: { type: "string" },
      embedding: { type: "string" },
      heads: { type: "string" },
      "kv-heads": { type: "string" },
      "head-dim": { type: "string" },
      "sliding-window": { type: "string" },
      ff: { type: "string" },
      context: { type: "string" },
      type: { type: "string" },
      tied: { type: "boolean" },
      name: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (!values.out) {
    console.error(`--out is required\n${usage}`);
    return 2;
  }
  const preset = BUILT_IN_PRESETS["tiny-chat"];
  const type = values.type ?? preset.type;
  if (!isModelType(type)) {
    console.error(`--type must be one of ${TINY_MODEL_TYPES.join(", ")}, got ${type}`);
    return 2;
  }
  const arch = values.arch ?? "llama";
  if (!isArchitecture(arch)) {
    console.error(`--arch must be one of ${TINY_ARCHITECTURES.join(", ")}, got ${arch}`);
    return 2;
  }
  const heads = int(values.heads, "heads") ?? preset.heads;
  const path = resolve(values.out);
  const started = performance.now();
  const info = await makeTinyModel({
    path,
    architecture: arch,
    name: values.name,
    seed: int(values.seed, "seed") ?? preset.seed,
    layers: int(values.layers, "layers") ?? preset.layers,
    embedding: int(values.embedding, "embedding") ?? preset.embedding,
    heads,
    // A custom --heads without --kv-heads gets plain multi-head attention.
    kvHeads: int(values["kv-heads"], "kv-heads") ?? (values.heads ? heads : preset.kvHeads),
    headDim: int(values["head-dim"], "head-dim"),
    ff: int(values.ff, "ff") ?? preset.ff,
    contextLength: int(values.context, "context") ?? preset.contextLength,
    type: type satisfies TinyModelType,
    // Absent: the architecture's default (gemma ties its head).
    tiedOutput: values.tied,
    slidingWindow: int(values["sliding-window"], "sliding-window"),
  });
  const ms = Math.round(performance.now() - started);
  console.log(`wrote ${info.path}`);
  console.log(`  arch        ${info.architecture}`);
  console.log(`  size        ${(info.bytes / 1024 / 1024).toFixed(2)} MiB (${info.bytes} bytes), ${info.tensors} tensors, ${type}`);
  console.log(`  parameters  ${info.parameters.toLocaleString("en-US")}`);
  console.log(`  vocab       ${info.vocabSize} tokens (byte-level BPE, ChatML <|im_start|> <|im_end|> <|endoftext|>)`);
  console.log(`  took        ${ms} ms`);
  console.log(`next: serve it by adding it to BASE_MODELS (e.g. BASE_MODELS=my-model=${info.path}),`);
  console.log(`      or load it with node-llama-cpp: (await getLlama()).loadModel({ modelPath: "${info.path}" })`);
  return 0;
}

function isModelType(name: string): name is TinyModelType {
  return (TINY_MODEL_TYPES as readonly string[]).includes(name);
}

function isArchitecture(name: string): name is TinyArchitecture {
  return (TINY_ARCHITECTURES as readonly string[]).includes(name);
}

function int(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new Error(`--${name} must be an integer, got ${raw}`);
  return n;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
