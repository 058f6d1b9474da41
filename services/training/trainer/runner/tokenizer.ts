// The chat tokenizer for one job, with its own llama.cpp instance disposed as soon as the rows are
// tokenized. This matters in the worker thread: terminating a worker that still holds a
// node-llama-cpp Llama aborts the whole process ("terminate called after throwing an instance of
// 'Napi::Error'", measured with node-llama-cpp 3.22.1); with it disposed, terminate is safe.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { ChatTokenizer } from "../tokenize/chat-tokenizer.js";

export async function withTokenizer<T>(modelPath: string, use: (tokenizer: ChatTokenizer) => T): Promise<T> {
  const llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
  try {
    const tokenizer = await ChatTokenizer.load(modelPath, { llama });
    try {
      return use(tokenizer);
    } finally {
      await tokenizer.dispose();
    }
  } finally {
    await llama.dispose();
  }
}
