// The web console's production build (console/dist), served at `/`: its files by path, and
// index.html at `/` (the console routes by `#/...`) and for a browser's page navigation to the run
// and project links the wandb and weave SDKs print (they land on the console).
// Every other request is the API's: an unknown path gets its JSON 404, never the console's HTML
// (clients probing an API path, such as weave's `/traces/server_info` or lm-eval's
// `/tokenizer_info`, would read a 200 page as an answer; they do not ask for text/html).
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { decodeSegment, requestTarget } from "./rest/request-target.js";

type NodeHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type Request = Parameters<NodeHandler>[0];
type Response = Parameters<NodeHandler>[1];

const DIST = fileURLToPath(new URL("../../console/dist/", import.meta.url));
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
};

/** Serves the request if it is a console page or asset; false when it is not the console's. */
export async function serveConsole(req: Request, res: Response): Promise<boolean> {
  const method = req.method ?? "GET";
  const path = requestTarget(req.url)?.pathname;
  if (path === undefined || (method !== "GET" && method !== "HEAD") || path.startsWith("/v1/") || path === "/v1") return false;
  // A malformed escape names no file: left to the API's 404.
  const decoded = decodeSegment(path);
  if (decoded === null || decoded.includes("\0")) return false;
  const wanted = normalize(join(DIST, decoded));
  if (!wanted.startsWith(DIST.endsWith(sep) ? DIST : DIST + sep)) return false;
  const page = path === "/" || (extname(path) === "" && asksForHtml(req.headers.accept) && isLinkedPage(path));
  const file = (await isFile(wanted)) ? wanted : page ? join(DIST, "index.html") : wanted;
  if (!(await isFile(file))) return false;
  const immutable = file.includes(`${sep}assets${sep}`);
  res.writeHead(200, {
    "content-type": TYPES[extname(file)] ?? "application/octet-stream",
    "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
    "x-content-type-options": "nosniff",
  });
  if (method === "HEAD") res.end();
  else {
    const stream = createReadStream(file);
    // A file removed between stat and read (a rebuild of the console) ends the response early.
    stream.once("error", () => res.destroy());
    stream.pipe(res as NodeJS.WritableStream);
  }
  return true;
}

/**
 * The console routes by `#/...`, so its own pages are `/` alone; the other paths a browser may load
 * it at are the run, project and trace links the wandb and weave SDKs print
 * (`/{entity}/{project}`, `/{entity}/{project}/runs/{id}`, ...). Paths under the API's own roots
 * are never pages, whoever asks.
 */
function isLinkedPage(path: string): boolean {
  const segments = path.split("/").slice(1);
  if (segments.some((segment) => segment === "") || API_ROOTS.has(segments[0] as string)) return false;
  return segments.length === 2 || (segments.length >= 3 && LINKED_PAGE_KINDS.has(segments[2] as string));
}

/** First path segments the API serves (REST, W&B, Hugging Face, weave's trace server, vLLM's routes). */
const API_ROOTS = new Set(["v1", "api", "graphql", "files", "wandb", "hf", "traces", "assets", "tokenize", "detokenize", "tokenizer_info", "metrics", "health"]);
/** The third segment of the page links the wandb and weave SDKs print. */
const LINKED_PAGE_KINDS = new Set(["runs", "sweeps", "artifacts", "reports", "workspace", "weave", "overview", "table"]);

/** A browser navigating to a page lists text/html in Accept; API clients do not. */
function asksForHtml(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
}
