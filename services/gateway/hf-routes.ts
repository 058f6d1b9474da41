// A read-only Hugging Face Hub file endpoint at `/hf`, so that `HF_ENDPOINT=http://host:port/hf`
// makes `AutoTokenizer.from_pretrained("<base model name>")` (transformers, Tinker's SDK,
// tinker-cookbook) load the tokenizer of a base model this service serves: each catalog base model
// is a model repository named like it (`tiny-chat`, or `org/name`) holding the three files
// services/weights writes from the GGUF the engine serves (tokenizer.json, tokenizer_config.json,
// special_tokens_map.json), at one revision, `main`, whose commit id is a hash of the files.
//
// What huggingface_hub and transformers ask (measured with huggingface_hub 2.4.0 and transformers
// 5.24.0, which pin the revision to the model info's `sha` and then resolve at that commit; see
// test/gateway/hf-hub.test.ts), and what each gets:
// - `HEAD|GET /{repo}/resolve/{revision}/{file}`: the file with `X-Repo-Commit`, `ETag` (the git
//   blob id, as the Hub gives for files kept in git) and `Content-Length`; a file the repository
//   lacks (config.json, tokenizer.model, chat_template.jinja, ...) is 404 with
//   `X-Error-Code: EntryNotFound` and the commit, which the client caches as "does not exist".
// - `GET /api/models/{repo}[/revision/{revision}]`: the model info (id, sha, siblings, no tags;
//   transformers reads the tags to detect Mistral repositories).
// - `GET /api/models/{repo}/tree/{revision}[/{path}]`: the file list (transformers lists the files
//   and the `additional_chat_templates` folder; folders do not exist here: EntryNotFound).
// - `GET /api/agent-harnesses`: huggingface_hub's agent registry, empty.
// An unknown repository is 404 `RepoNotFound`, a revision other than `main` or the commit 404
// `RevisionNotFound`, any other path under /hf 404 `EntryNotFound`; never the console's page.
//
// Public, like the console's files: a tokenizer is not a secret (the catalog's names are the
// models the operator serves, and every file comes from a vocabulary the engine's own responses
// reveal token by token), clients send no service key here (huggingface_hub sends `HF_TOKEN`, a
// Hugging Face token, if the user has one: it is neither read nor logged), and a keyed endpoint
// would make every Tinker or cookbook user put their service key in HF_TOKEN.
import { createHash } from "node:crypto";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import type { Logger } from "../core/logger.js";
import { HF_TOKENIZER_FILES, UnsupportedTokenizerError, type HfTokenizerFiles } from "../weights/index.js";
import { decodeSegment, requestTarget } from "./rest/request-target.js";

type NodeHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type Request = Parameters<NodeHandler>[0];
type Response = Parameters<NodeHandler>[1];

const HF_PREFIX = "/hf";

/** The base models whose tokenizers are served, by catalog name. */
export interface HfTokenizerRepos {
  has(name: string): boolean;
  /** The files of a base model `has` knows; UnsupportedTokenizerError when its tokenizer is not converted. */
  files(name: string): Promise<HfTokenizerFiles>;
}

export interface HfRouteOptions {
  repos: HfTokenizerRepos;
  log: Logger;
}

/** One repository's files as the Hub shows them. */
interface Snapshot {
  commit: string;
  files: Map<string, { body: Buffer; oid: string }>;
}

class HubError extends Error {
  constructor(
    readonly status: number,
    readonly code: "RepoNotFound" | "RevisionNotFound" | "EntryNotFound" | null,
    message: string,
    readonly commit: string | null = null,
  ) {
    super(message);
  }
}

/** Serves the request if its path is under /hf; false otherwise. */
export function hfRoutes({ repos, log }: HfRouteOptions): (req: Request, res: Response) => Promise<boolean> {
  const snapshots = new WeakMap<HfTokenizerFiles, Snapshot>();
  const snapshotOf = async (repo: string): Promise<Snapshot> => {
    const files = await repos.files(repo);
    let snapshot = snapshots.get(files);
    if (!snapshot) snapshots.set(files, (snapshot = makeSnapshot(files)));
    return snapshot;
  };

  return async (req, res) => {
    const path = requestTarget(req.url)?.pathname ?? "/";
    if (path !== HF_PREFIX && !path.startsWith(`${HF_PREFIX}/`)) return false;
    const verb = (req.method ?? "GET").toUpperCase();
    const started = performance.now();
    let status = 200;
    let route = "unknown";
    try {
      if (verb !== "GET" && verb !== "HEAD") throw new HubError(405, null, `${verb} is not served here: this is a read-only Hub endpoint`);
      const segments = path.slice(HF_PREFIX.length + 1).split("/").map(decodeSegment);
      if (segments.some((s) => s === null)) throw new HubError(404, "EntryNotFound", "the path has a malformed escape");
      const parts = segments as string[];
      const target = routeOf(parts, repos);
      route = target.kind;
      switch (target.kind) {
        case "agent-harnesses":
          writeJson(res, verb, 200, { standardEnvVars: [], harnesses: {} });
          break;
        case "model-info": {
          const snapshot = await revisionOf(target.repo, target.revision);
          writeJson(res, verb, 200, {
            _id: snapshot.commit.slice(0, 24),
            id: target.repo,
            modelId: target.repo,
            sha: snapshot.commit,
            private: false,
            gated: false,
            disabled: false,
            downloads: 0,
            likes: 0,
            tags: [],
            siblings: [...snapshot.files].map(([name, file]) => ({ rfilename: name, size: file.body.length })),
          });
          break;
        }
        case "tree": {
          const snapshot = await revisionOf(target.repo, target.revision);
          if (target.path !== "") throw new HubError(404, "EntryNotFound", `${target.path} does not exist in ${target.repo}`, snapshot.commit);
          writeJson(res, verb, 200, [...snapshot.files].map(([name, file]) => ({ type: "file", oid: file.oid, size: file.body.length, path: name })));
          break;
        }
        case "resolve": {
          const snapshot = await revisionOf(target.repo, target.revision);
          const file = snapshot.files.get(target.file);
          if (!file) throw new HubError(404, "EntryNotFound", `${target.file} does not exist in ${target.repo} (it holds ${[...snapshot.files.keys()].join(", ")})`, snapshot.commit);
          status = writeFile(req, res, verb, file, snapshot.commit);
          break;
        }
        case "repo-not-found":
          throw new HubError(404, "RepoNotFound", `${target.repo} is not a base model of this service`);
        case "unknown":
          throw new HubError(404, "EntryNotFound", `${path} is not served by this Hub endpoint`);
      }
    } catch (error) {
      const hub = asHubError(error);
      status = hub.status;
      if (status >= 500 && !(error instanceof UnsupportedTokenizerError)) log.error("hub request failed", { route, error });
      const headers: Record<string, string> = { "x-error-message": headerSafe(hub.message) };
      if (hub.code) headers["x-error-code"] = hub.code;
      if (hub.commit) headers["x-repo-commit"] = hub.commit;
      if (hub.status === 405) headers.allow = "GET, HEAD";
      // A body not read is not read on: the connection ends with the answer (HTTP/1.1 only).
      if (!req.complete && req.httpVersionMajor === 1) headers.connection = "close";
      if (res.headersSent) res.destroy();
      else writeJson(res, verb, status, { error: hub.message }, headers);
    }
    log.info("request", { protocol: "hf", route, method: verb, status, duration_ms: Math.round(performance.now() - started) });
    return true;
  };

  async function revisionOf(repo: string, revision: string): Promise<Snapshot> {
    const snapshot = await snapshotOf(repo);
    if (revision !== "main" && revision !== snapshot.commit) {
      throw new HubError(404, "RevisionNotFound", `${repo} has the revision main (commit ${snapshot.commit}) only, not ${revision}`);
    }
    return snapshot;
  }
}

type Route =
  | { kind: "agent-harnesses" }
  | { kind: "model-info"; repo: string; revision: string }
  | { kind: "tree"; repo: string; revision: string; path: string }
  | { kind: "resolve"; repo: string; revision: string; file: string }
  | { kind: "repo-not-found"; repo: string }
  | { kind: "unknown" };

/**
 * Reads the path after /hf/. A repository id is one segment or two (`org/name`); where both
 * readings fit the path, the one the catalog knows wins.
 */
function routeOf(parts: readonly string[], repos: HfTokenizerRepos): Route {
  if (parts.length === 2 && parts[0] === "api" && parts[1] === "agent-harnesses") return { kind: "agent-harnesses" };
  const api = parts[0] === "api" && parts[1] === "models";
  // Where the repository id ends: api/models/{repo}[/revision/{r} | /tree/{r}[/path]], or {repo}/resolve/{r}/{file}.
  const readings = [2, 1].flatMap((length): { repo: string; tail: string[] }[] => {
    const rest = api ? parts.slice(2) : parts;
    const tail = rest.slice(length);
    const fits = api ? rest.length >= length && fitsApi(tail) : rest[length] === "resolve" && tail.length >= 3 && tail[1] !== "";
    return fits ? [{ repo: rest.slice(0, length).join("/"), tail }] : [];
  });
  const reading = readings.find((r) => repos.has(r.repo));
  if (!reading) return readings[0] ? { kind: "repo-not-found", repo: readings[0].repo } : { kind: "unknown" };
  const { repo, tail } = reading;
  if (!api) return { kind: "resolve", repo, revision: tail[1]!, file: tail.slice(2).join("/") };
  if (tail.length === 0) return { kind: "model-info", repo, revision: "main" };
  if (tail[0] === "revision") return { kind: "model-info", repo, revision: tail[1]! };
  return { kind: "tree", repo, revision: tail[1]!, path: tail.slice(2).join("/") };
}

/** The part of an /api/models path after the repository id. */
function fitsApi(tail: readonly string[]): boolean {
  if (tail.length === 0) return true;
  if (tail[0] === "revision") return tail.length === 2 && tail[1] !== "";
  return tail[0] === "tree" && tail.length >= 2 && tail[1] !== "";
}

function makeSnapshot(files: HfTokenizerFiles): Snapshot {
  const entries = new Map<string, { body: Buffer; oid: string }>();
  const commit = createHash("sha1").update("srl hf tokenizer files\n");
  for (const name of HF_TOKENIZER_FILES) {
    const body = Buffer.from(files[name], "utf8");
    // The git blob id, which the Hub gives as the ETag of a file kept in git (not LFS).
    const oid = createHash("sha1").update(`blob ${body.length}\0`).update(body).digest("hex");
    entries.set(name, { body, oid });
    commit.update(`${name} ${oid}\n`);
  }
  return { commit: commit.digest("hex"), files: entries };
}

/** A file, whole or one byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`, as a resumed download asks). */
function writeFile(req: Request, res: Response, verb: string, file: { body: Buffer; oid: string }, commit: string): number {
  const headers: Record<string, string> = {
    "content-type": "application/json; charset=utf-8",
    etag: `"${file.oid}"`,
    "x-repo-commit": commit,
    "accept-ranges": "bytes",
  };
  const size = file.body.length;
  const range = /^bytes=(\d*)-(\d*)$/.exec(String(req.headers.range ?? "").trim());
  let body = file.body;
  let status = 200;
  if (range && (range[1] || range[2])) {
    const start = range[1] ? Number(range[1]) : Math.max(0, size - Number(range[2]));
    const end = range[1] && range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
    if (start >= size || start > end) {
      res.writeHead(416, { ...headers, "content-range": `bytes */${size}`, "content-length": "0" });
      res.end();
      return 416;
    }
    body = file.body.subarray(start, end + 1);
    headers["content-range"] = `bytes ${start}-${end}/${size}`;
    status = 206;
  }
  res.writeHead(status, { ...headers, "content-length": String(body.length) });
  if (verb === "HEAD") res.end();
  else res.end(body);
  return status;
}

function writeJson(res: Response, verb: string, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) });
  if (verb === "HEAD") res.end();
  else res.end(text);
}

function asHubError(error: unknown): HubError {
  if (error instanceof HubError) return error;
  // The repository exists but its tokenizer is not one written as HF files: nothing to serve, and
  // nothing a retry changes (huggingface_hub shows the message with the status).
  if (error instanceof UnsupportedTokenizerError) return new HubError(501, null, `this base model's tokenizer cannot be served as Hugging Face files: ${error.message}`);
  // The model file is missing or could not be fetched: the cause (with the operator's paths) goes
  // to the log, not to an unauthenticated client.
  return new HubError(503, null, "the base model's file is unavailable right now (the service's log says why)");
}

/** Header values are Latin-1 without controls: anything else is escaped. */
function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (ch) => encodeURIComponent(ch)).slice(0, 1000);
}
