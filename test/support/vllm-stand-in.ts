// A stand-in for a vLLM (>= 0.10.2) OpenAI server, in the test's own process: vLLM needs a GPU,
// which the test machines lack, so its backend (services/inference/engine/remote/vllm.ts) is
// tested against this instead. It speaks the part of vLLM's API that backend uses, in vLLM's own
// shapes and words (vllm/entrypoints/openai/serving_models.py and protocol.py):
//   GET  /health, GET /v1/models (the base model, then one card per loaded LoRA)
//   POST /v1/load_lora_adapter, /v1/unload_lora_adapter (runtime LoRA updating)
//   POST /v1/completions with stream: true (text_completion chunks, a usage chunk, [DONE])
// Generation is deterministic so tests can predict it: token i is (last prompt id + i) % 200 + 1,
// with the text `t<id> `. Every request body is recorded; a replica can be taken down (its server
// closed) and brought back on the same port, made to fail its health checks, or made to answer
// its next completion with an error.
import { access } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

export const SERVED_MODEL = "base-model";
export const MAX_MODEL_LEN = 512;

export interface Recorded {
  method: string;
  path: string;
  /** The JSON body as sent. */
  body: Record<string, unknown>;
}

/** The ids the stand-in generates after `prompt`, with nothing stopping it. */
export function tokensAfter(prompt: readonly number[], count: number): number[] {
  const last = prompt.at(-1) ?? 0;
  return Array.from({ length: count }, (_, i) => ((last + i) % 200) + 1);
}

export const tokenText = (id: number) => `t${id} `;

/**
 * The log-probabilities of the i-th generated token: the sampled token is the likeliest at even
 * positions and the unlikeliest at odd ones, and the alternatives are listed least likely first,
 * so a client must sort and cut to the requested number itself.
 */
export function logprobsAt(i: number, id: number, top: number): { sampled: number; top: Record<string, number> } {
  const sampled = i % 2 === 0 ? -0.001 : -(i + 1) / 4;
  const alternatives = Object.fromEntries(Array.from({ length: top }, (_, k) => [`alt${k}`, -0.01 * (k + 1)] as const));
  const entries = Object.entries({ ...alternatives, [tokenText(id)]: sampled }).sort((a, b) => a[1] - b[1]);
  return { sampled, top: Object.fromEntries(entries) };
}

export class VllmStandIn {
  /** Every request but health checks, in arrival order. */
  readonly requests: Recorded[] = [];
  /** LoRA adapters loaded now: name -> path. */
  readonly loras = new Map<string, string>();
  /** What the usage chunk reports as prefix-cached prompt tokens. */
  cachedTokens = 0;
  /** Answers its health checks with 503 (vLLM while it starts, or once its engine died) but still serves. */
  unhealthy = false;
  /** A pause before each token (0: the whole answer at once), to keep a request in flight. */
  tokenDelayMs = 0;
  /** The model's end-of-sequence token, when the deterministic sequence should meet one (null: never). */
  eosTokenId: number | null = null;
  /** When set, the end-of-sequence token comes as the token at this index (as a model's EOS would). */
  eosAt: number | null = null;
  private readonly failures: { status: number; message: string }[] = [];
  private healthWaiters: { left: number; resolve(): void }[] = [];
  private server: Server | null = null;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The bodies of the completions it was asked for. */
  completions(): Record<string, unknown>[] {
    return this.requests.filter((r) => r.path === "/v1/completions").map((r) => r.body);
  }

  calls(path: string): Recorded[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** The next completions answer with these errors (in vLLM's error shape), before any token. */
  failNextCompletion(status: number, message: string): void {
    this.failures.push({ status, message });
  }

  reset(): void {
    this.requests.length = 0;
    this.failures.length = 0;
    this.cachedTokens = 0;
    this.eosTokenId = null;
    this.eosAt = null;
    this.tokenDelayMs = 0;
  }

  /** Listens (again, on the same port once it had one). */
  async start(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Down: the port refuses connections, and open ones are cut. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  /** Resolves once `count` more health checks were answered (the service has seen the replica's state). */
  healthChecks(count: number): Promise<void> {
    return new Promise((resolve) => this.healthWaiters.push({ left: count, resolve }));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    let text = "";
    for await (const chunk of req) text += String(chunk);
    if (path === "/health" && req.method === "GET") {
      res.writeHead(this.unhealthy ? 503 : 200).end();
      for (const waiter of this.healthWaiters) waiter.left--;
      // After this answer is written: the service applies it as soon as it reads it.
      for (const waiter of this.healthWaiters.filter((w) => w.left <= 0)) setImmediate(waiter.resolve);
      this.healthWaiters = this.healthWaiters.filter((w) => w.left > 0);
      return;
    }
    let body: Record<string, unknown> = {};
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      return error(res, 400, "BadRequestError", "the body is not JSON");
    }
    this.requests.push({ method: req.method ?? "", path, body });
    if (path === "/v1/models" && req.method === "GET") return this.models(res);
    if (path === "/v1/load_lora_adapter" && req.method === "POST") return this.load(res, body as { lora_name?: string; lora_path?: string });
    if (path === "/v1/unload_lora_adapter" && req.method === "POST") return this.unload(res, body as { lora_name?: string });
    if (path === "/v1/completions" && req.method === "POST") return this.complete(res, body as unknown as Completion);
    error(res, 404, "NotFoundError", "Not Found");
  }

  private models(res: ServerResponse): void {
    const card = (id: string, root: string, parent: string | null, maxModelLen: number | null) => ({
      id,
      object: "model",
      created: 1_700_000_000,
      owned_by: "vllm",
      root,
      parent,
      max_model_len: maxModelLen,
      permission: [],
    });
    // vLLM lists the served name with the path it loaded the weights from as its root.
    const data = [card(SERVED_MODEL, `/models/${SERVED_MODEL}`, null, MAX_MODEL_LEN), ...[...this.loras].map(([name, path]) => card(name, path, SERVED_MODEL, null))];
    json(res, 200, { object: "list", data });
  }

  private async load(res: ServerResponse, body: { lora_name?: string; lora_path?: string }): Promise<void> {
    const { lora_name: name, lora_path: path } = body;
    if (!name || !path) return error(res, 400, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.");
    if (this.loras.has(name)) return error(res, 400, "InvalidUserInput", `The lora adapter '${name}' has already been loaded.`);
    // vLLM reads the PEFT directory on this machine: its adapter_config.json first.
    try {
      await access(join(path, "adapter_config.json"));
    } catch {
      return error(res, 404, "NotFoundError", `No adapter found for ${path}`);
    }
    this.loras.set(name, path);
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(`Success: LoRA adapter '${name}' added successfully.`);
  }

  private unload(res: ServerResponse, body: { lora_name?: string }): void {
    const name = body.lora_name;
    if (!name) return error(res, 400, "InvalidUserInput", "either 'lora_name' and 'lora_int_id' needs to be provided.");
    if (!this.loras.delete(name)) return error(res, 404, "NotFoundError", `The lora adapter '${name}' cannot be found.`);
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(`Success: LoRA adapter '${name}' removed successfully.`);
  }

  private async complete(res: ServerResponse, body: Completion): Promise<void> {
    const failure = this.failures.shift();
    if (failure) return error(res, failure.status, failure.status >= 500 ? "InternalServerError" : "BadRequestError", failure.message);
    if (body.model !== SERVED_MODEL && !this.loras.has(body.model)) return error(res, 404, "NotFoundError", `The model \`${body.model}\` does not exist.`);
    if (!body.stream) return error(res, 400, "BadRequestError", "this stand-in streams only (as the service always asks)");
    if (!Array.isArray(body.prompt) || !body.prompt.every((id) => Number.isInteger(id))) return error(res, 400, "BadRequestError", "prompt: token ids expected");
    const prompt = body.prompt;
    const maxTokens = body.max_tokens ?? MAX_MODEL_LEN - prompt.length;
    const stops = new Set(body.stop_token_ids ?? []);
    const minTokens = body.min_tokens ?? 0;
    const eos = body.ignore_eos ? null : this.eosTokenId;
    const top = typeof body.logprobs === "number" ? body.logprobs : null;
    const id = `cmpl-${Math.random().toString(36).slice(2)}`;
    const created = Math.floor(Date.now() / 1000);
    let closed = false;
    res.on("close", () => (closed = true));
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    const send = (data: unknown) => !closed && res.write(`data: ${JSON.stringify(data)}\n\n`);

    let offset = 0;
    let generated = 0;
    let next = tokensAfter(prompt, 1)[0] as number;
    for (let i = 0; i < maxTokens && !closed; i++) {
      if (this.tokenDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.tokenDelayMs));
      // Like vLLM's min_tokens: EOS and stop tokens are never sampled before min_tokens (their logits are -inf).
      while (i < minTokens && (stops.has(next) || next === eos)) next = (next % 200) + 1;
      const eosNow = eos !== null && this.eosAt === i && i >= minTokens;
      const token = eosNow ? (eos as number) : next;
      if (!eosNow) next = (next % 200) + 1;
      generated++;
      const ended = token === eos;
      const stopped = ended || stops.has(token);
      const last = stopped || i === maxTokens - 1;
      // vLLM keeps a stop token's (or EOS's) id in token_ids but leaves its text out.
      const text = stopped ? "" : tokenText(token);
      const lp = top === null ? null : logprobsAt(i, token, top);
      send({
        id,
        object: "text_completion",
        created,
        model: body.model,
        choices: [
          {
            index: 0,
            text,
            logprobs: lp && { tokens: [tokenText(token)], token_logprobs: [lp.sampled], top_logprobs: [lp.top], text_offset: [offset] },
            finish_reason: last ? (stopped ? "stop" : "length") : null,
            // vLLM names the stop token id it stopped on; EOS is no stop token (stop_reason null).
            stop_reason: stopped && !ended ? token : null,
            ...(body.return_token_ids ? { token_ids: [token], ...(i === 0 ? { prompt_token_ids: prompt } : {}) } : {}),
          },
        ],
        usage: null,
      });
      offset += text.length;
      if (last) break;
    }
    if (body.stream_options?.include_usage) {
      send({
        id,
        object: "text_completion",
        created,
        model: body.model,
        choices: [],
        usage: { prompt_tokens: prompt.length, completion_tokens: generated, total_tokens: prompt.length + generated, prompt_tokens_details: { cached_tokens: this.cachedTokens } },
      });
    }
    if (!closed) res.end("data: [DONE]\n\n");
  }
}

interface Completion {
  model: string;
  prompt: number[];
  max_tokens?: number;
  min_tokens?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  return_token_ids?: boolean;
  stop_token_ids?: number[];
  ignore_eos?: boolean;
  logprobs?: number;
}

export async function startVllmStandIn(): Promise<VllmStandIn> {
  const standIn = new VllmStandIn();
  await standIn.start();
  return standIn;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** vLLM's ErrorResponse (0.10.x): {"error": {"message", "type", "param", "code"}}. */
function error(res: ServerResponse, status: number, type: string, message: string): void {
  json(res, status, { error: { message, type, param: null, code: status } });
}
