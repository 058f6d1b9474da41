// Context sequences taking over another's state (a beam branching off its parent). Two ways:
// - through a state file (node-llama-cpp's saveStateToFile / loadStateFromFile: llama.cpp's
//   llama_state_seq_get_data / set_data), which moves only the cells the source uses: about 2 ms
//   for 100 tokens of SmolLM2-135M;
// - llama_memory_seq_cp (node-llama-cpp's internal _copyStateFromOtherSequence), which, with a
//   KV cache per sequence as node-llama-cpp creates them, copies the source's whole buffer
//   whatever it holds: about 11 ms for an 8,192-token sequence of the same model.
// The file is used while the source fills less than a quarter of its context, the buffer copy
// beyond. Either takes the context lock, so the decode loop is asked to hand it over between
// batches meanwhile (patches/node-llama-cpp+3.22.1.patch), or a copy would wait for every other
// sequence of the context to stop generating.
import { existsSync } from "node:fs";
import { unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence } from "node-llama-cpp";

interface CopyingSequence {
  _copyStateFromOtherSequence(other: LlamaContextSequence, upToTokenIndex: number): Promise<boolean>;
}

/** A RAM-backed directory where there is one (state files are written and read back at once). */
const STATE_DIR = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
let files = 0;

/** Gives each of `targets` the state (tokens and KV cache) of `source`. */
export async function copySequenceState(source: LlamaContextSequence, targets: LlamaContextSequence[]): Promise<void> {
  if (targets.length === 0) return;
  if (source.nextTokenIndex * 4 < source.contextSize) await throughFile(source, targets);
  else for (const target of targets) await bufferCopy(source, target);
}

async function throughFile(source: LlamaContextSequence, targets: LlamaContextSequence[]): Promise<void> {
  const path = join(STATE_DIR, `srl-sequence-${process.pid}-${files++}.state`);
  try {
    await handingOver(source, () => source.saveStateToFile(path));
    for (const target of targets) {
      // A file this process just wrote from the same model: the risk the flag is about is not here.
      await handingOver(target, () => target.loadStateFromFile(path, { acceptRisk: true }));
    }
  } finally {
    await unlink(path).catch(() => undefined);
  }
}

async function bufferCopy(source: LlamaContextSequence, target: LlamaContextSequence): Promise<void> {
  const copy = (target as unknown as Partial<CopyingSequence>)._copyStateFromOtherSequence;
  if (typeof copy !== "function") throw new Error("node-llama-cpp no longer has LlamaContextSequence._copyStateFromOtherSequence; update sequence-fork.ts");
  const tokens = [...source.contextTokens];
  if (await handingOver(target, () => copy.call(target, source, tokens.length))) return;
  // A partial copy: evaluate the tokens instead.
  await target.clearHistory();
  await target.evaluateWithoutGeneratingNewTokens(tokens);
}

/** Runs `task`, which takes the context lock, with the decode loop handing the lock over between batches. */
async function handingOver<T>(sequence: LlamaContextSequence, task: () => Promise<T>): Promise<T> {
  const context = sequence.context as unknown as { _lockWaiters?: number };
  if (typeof context._lockWaiters !== "number") return task();
  context._lockWaiters++;
  try {
    return await task();
  } finally {
    context._lockWaiters--;
  }
}
