// The /hf Hugging Face Hub endpoint end to end: the real server, and transformers in the trainer's
// Python environment with only HF_ENDPOINT set (a fresh HF_HOME, not offline, no HF_TOKEN) running
// `AutoTokenizer.from_pretrained("<base model name>")` for a built-in model and for SmolLM2 under an
// `org/name` catalog name; its tokens are the engine's (llama.cpp on the GGUF the server serves).
// Then huggingface_hub's own calls and errors, and the raw answers (headers, ranges, 404s that are
// never the console's page).
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { getLlama, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatTokenizer } from "../../services/training/trainer/tokenize/chat-tokenizer.js";
import { DEFAULT_TRAINER_PYTHON } from "../../services/training/index.js";
import { gv } from "../../services/weights/gguf/values.js";
import { writeGguf } from "../../services/weights/gguf/writer.js";
import { ensureBuiltInModel, hfTokenizerFilesOfGguf, readGgufHeader } from "../../services/weights/index.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const PYTHON = process.env.TRAINER_PYTHON ?? DEFAULT_TRAINER_PYTHON;
const SMOLLM2 = resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const SMOL_REPO = "HuggingFaceTB/SmolLM2-135M-Instruct";
const present = existsSync(SMOLLM2);
const TEXTS = ["hello", "Hello, world! It's 2024.", "naïve café 東京 🙂\n\n  x = 1", "<|im_start|>user\nhi<|im_end|>\n"];

// argv: texts (JSON), repository ids (JSON). Prints what the client got, and each failure's type and message.
const SCRIPT = `
import json, sys
from transformers import AutoTokenizer
from huggingface_hub import HfApi, hf_hub_download
texts, repos = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {"repos": {}, "errors": {}}
for repo in repos:
    t = AutoTokenizer.from_pretrained(repo)
    again = AutoTokenizer.from_pretrained(repo)  # from the cache, the server asked again
    chat = [{"role": "user", "content": "hello"}]
    out["repos"][repo] = {
        "ids": [t.encode(x) for x in texts],
        "again": [again.encode(x) for x in texts],
        "chat": t.apply_chat_template(chat, tokenize=False, add_generation_prompt=True),
        "eos": t.eos_token,
        "model_max_length": t.model_max_length,
    }
api = HfApi()
out["files"] = sorted(api.list_repo_files("tiny-chat"))
out["sha"] = api.model_info("tiny-chat").sha
def attempt(name, f):
    try:
        f()
        out["errors"][name] = None
    except Exception as e:
        chain, cause = [], e
        while cause is not None:  # what a traceback prints, innermost last here
            chain.append(str(cause))
            cause = cause.__cause__
        out["errors"][name] = [type(e).__name__, " | ".join(chain)]
attempt("missing_file", lambda: hf_hub_download("tiny-chat", "config.json"))
attempt("missing_repo", lambda: AutoTokenizer.from_pretrained("no-such-model"))
attempt("bad_revision", lambda: hf_hub_download("tiny-chat", "tokenizer.json", revision="v9"))
attempt("spm", lambda: AutoTokenizer.from_pretrained("spm-tokenizer"))
print(json.dumps(out))
`;

interface ClientSide {
  repos: Record<string, { ids: number[][]; again: number[][]; chat: string; eos: string; model_max_length: number }>;
  files: string[];
  sha: string;
  errors: Record<string, [string, string] | null>;
}

let server: IsolatedServer;
let scratch: string;
let llama: Llama;
let base: string;
let client: ClientSide;

beforeAll(async () => {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing: the install step (scripts/install-trainer.sh) creates the trainer's Python environment; run it, or set TRAINER_PYTHON`);
  scratch = await mkdtemp(join(tmpdir(), "hf-hub-test-"));
  // A SentencePiece tokenizer (tiny-chat's metadata with tokenizer.ggml.model "llama"): served as an error.
  const spm = new Map((await readGgufHeader(await ensureBuiltInModel("tiny-chat", scratch))).metadata);
  spm.set("tokenizer.ggml.model", gv.str("llama"));
  await writeGguf(join(scratch, "spm.gguf"), spm, []);
  const baseModels = [`spm-tokenizer=${join(scratch, "spm.gguf")}`, `gone=${join(scratch, "gone.gguf")}`, ...(present ? [`${SMOL_REPO}=${SMOLLM2}`] : [])];
  server = await startIsolatedServer({ name: "hf-hub", entity: "hf", env: { BASE_MODELS: baseModels.join(","), LOG_LEVEL: "info" } });
  base = `${server.server.url}/hf`;
  llama = await getLlama({ gpu: false, build: "never", progressLogs: false });

  const env: NodeJS.ProcessEnv = { ...process.env, HF_ENDPOINT: base, HF_HOME: join(scratch, "hf-home"), TRANSFORMERS_VERBOSITY: "error" };
  for (const name of ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_OFFLINE"]) delete env[name];
  const repos = ["tiny-chat", ...(present ? [SMOL_REPO] : [])];
  try {
    const { stdout } = await promisify(execFile)(PYTHON, ["-c", SCRIPT, JSON.stringify(TEXTS), JSON.stringify(repos)], { env, timeout: 240_000, maxBuffer: 16 * 2 ** 20 });
    client = JSON.parse(stdout) as ClientSide;
  } catch (err) {
    throw new Error(`the Hub client failed against ${base}: ${err instanceof Error ? err.message : String(err)}\n${(err as { stderr?: string }).stderr ?? ""}`, { cause: err });
  }
}, 360_000);

afterAll(async () => {
  await llama?.dispose();
  await server?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** The engine's tokens for the texts (llama.cpp, vocabulary of the model file the server serves). */
async function engineTokens(path: string): Promise<{ ids: number[][]; chat: string }> {
  const tokenizer = await ChatTokenizer.load(path, { llama });
  try {
    return { ids: TEXTS.map((t) => tokenizer.promptTokens(t, true)), chat: tokenizer.render([{ role: "user", content: "hello" }], null, true) };
  } finally {
    await tokenizer.dispose();
  }
}

describe("AutoTokenizer.from_pretrained through HF_ENDPOINT", () => {
  it("loads tiny-chat's tokenizer from the server and encodes as the engine does", async () => {
    const path = join(server.dataDir, "models", "tiny-chat.gguf");
    const engine = await engineTokens(path);
    const got = client.repos["tiny-chat"]!;
    expect(got.ids).toEqual(engine.ids);
    expect(got.again).toEqual(engine.ids);
    expect(got.chat).toBe(engine.chat);
    expect(got.eos).toBe("<|im_end|>");
    expect(got.model_max_length).toBe(2048);
    expect(client.files).toEqual(["special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]);
    expect(client.sha).toMatch(/^[0-9a-f]{40}$/);
  });

  it.skipIf(!present)("loads SmolLM2's under an org/name catalog name", async () => {
    const engine = await engineTokens(SMOLLM2);
    const got = client.repos[SMOL_REPO]!;
    expect(got.ids).toEqual(engine.ids);
    expect(got.again).toEqual(engine.ids);
    expect(got.chat).toBe(engine.chat);
    expect(got.model_max_length).toBe(8192);
  });

  it("answers huggingface_hub's errors with the error codes it reads", () => {
    expect(client.errors.missing_file?.[0]).toBe("RemoteEntryNotFoundError");
    expect(client.errors.missing_repo?.[1]).toMatch(/not a valid model identifier|no-such-model/);
    expect(client.errors.bad_revision?.[0]).toBe("RevisionNotFoundError");
    // The reason reaches the user: transformers reports a failed look-up, caused by the server's
    // answer (first in the traceback), which says SentencePiece is not served.
    expect(client.errors.spm?.[1]).toMatch(/501 Not Implemented.*tokenizer cannot be served as Hugging Face files.*SentencePiece/s);
  });
});

describe("the /hf routes", () => {
  it("serve the files generated from the GGUF the engine serves, with the Hub's headers", async () => {
    const expected = await hfTokenizerFilesOfGguf(join(server.dataDir, "models", "tiny-chat.gguf"));
    const head = await fetch(`${base}/tiny-chat/resolve/main/tokenizer.json`, { method: "HEAD" });
    expect(head.status).toBe(200);
    const commit = head.headers.get("x-repo-commit");
    expect(commit).toBe(client.sha);
    expect(head.headers.get("etag")).toMatch(/^"[0-9a-f]{40}"$/);
    expect(Number(head.headers.get("content-length"))).toBe(Buffer.byteLength(expected["tokenizer.json"]));
    for (const name of ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"] as const) {
      const res = await fetch(`${base}/tiny-chat/resolve/${commit}/${name}`);
      expect(res.status, name).toBe(200);
      expect(await res.text()).toBe(expected[name]);
    }
    const ranged = await fetch(`${base}/tiny-chat/resolve/main/tokenizer.json`, { headers: { range: "bytes=10-19" } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-range")).toBe(`bytes 10-19/${Buffer.byteLength(expected["tokenizer.json"])}`);
    expect(await ranged.text()).toBe(expected["tokenizer.json"].slice(10, 20));
    const tree = (await (await fetch(`${base}/api/models/tiny-chat/tree/main?recursive=true&expand=false`)).json()) as { path: string; type: string }[];
    expect(tree.map((e) => [e.type, e.path])).toEqual([
      ["file", "tokenizer.json"],
      ["file", "tokenizer_config.json"],
      ["file", "special_tokens_map.json"],
    ]);
  });

  it("answer unknown things with 404s and huggingface_hub's error codes, never the console's page", async () => {
    const html = { accept: "text/html,application/xhtml+xml" };
    const cases: [string, string, number, string | null][] = [
      ["GET", "/tiny-chat/resolve/main/config.json", 404, "EntryNotFound"],
      ["HEAD", "/tiny-chat/resolve/main/tokenizer.model", 404, "EntryNotFound"],
      ["GET", "/tiny-chat/resolve/v9/tokenizer.json", 404, "RevisionNotFound"],
      ["GET", "/no-such-model/resolve/main/tokenizer.json", 404, "RepoNotFound"],
      ["GET", "/org/no-such-model/resolve/main/tokenizer.json", 404, "RepoNotFound"],
      ["GET", "/api/models/no-such-model", 404, "RepoNotFound"],
      ["GET", "/api/models/tiny-chat/tree/main/additional_chat_templates", 404, "EntryNotFound"],
      ["GET", "/some/page", 404, "EntryNotFound"],
      ["GET", "", 404, "EntryNotFound"],
      ["POST", "/tiny-chat/resolve/main/tokenizer.json", 405, null],
    ];
    for (const [method, path, status, code] of cases) {
      const res = await fetch(`${base}${path}`, { method, headers: html });
      const label = `${method} /hf${path}`;
      expect(res.status, label).toBe(status);
      expect(res.headers.get("x-error-code"), label).toBe(code);
      expect(res.headers.get("content-type"), label).toBe("application/json");
      if (method !== "HEAD") expect(((await res.json()) as { error: string }).error, label).toBeTruthy();
    }
    // A file the repository lacks carries the commit, so the client remembers it is absent.
    const missing = await fetch(`${base}/tiny-chat/resolve/main/config.json`, { method: "HEAD" });
    expect(missing.headers.get("x-repo-commit")).toBe(client.sha);
    // The unsupported tokenizer: 501 with the reason.
    const spm = await fetch(`${base}/spm-tokenizer/resolve/main/tokenizer.json`);
    expect(spm.status).toBe(501);
    expect(((await spm.json()) as { error: string }).error).toMatch(/SentencePiece/);
    // A model file that is not there: 503, and the operator's paths stay in the log.
    const gone = await fetch(`${base}/gone/resolve/main/tokenizer.json`);
    expect(gone.status).toBe(503);
    const goneBody = await gone.text();
    expect(goneBody).toContain("unavailable");
    expect(goneBody).not.toContain(scratch);
  });

  it("logs its requests without credentials", async () => {
    await fetch(`${base}/tiny-chat/resolve/main/tokenizer.json`, { method: "HEAD", headers: { authorization: "Bearer hf_secret_token_value" } });
    const log = await readFile(server.server.logFile, "utf8");
    expect(log).toMatch(/"protocol":"hf","route":"resolve","method":"HEAD","status":200/);
    expect(log).not.toContain("hf_secret_token_value");
  });
});
