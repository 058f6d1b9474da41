// The W&B API the wandb SDK speaks, over the service's own stores: GraphQL (graphql.ts), the run
// file stream, and the signed transfer URLs. The gateway (services/gateway/wandb-routes.ts) does
// HTTP; everything here takes the authenticated principal and plain values.
import { badRequest, notFound } from "../core/errors.js";
import type { ArtifactUploads } from "./artifact-uploads.js";
import { manifestJson } from "./artifact-objects.js";
import type { ArtifactViews } from "./artifact-views.js";
import { parseByteRange, sliceChunks } from "./byte-range.js";
import { CostBudget, type CostBudgetSettings } from "./cost-budget.js";
import { executeGraphql, type GraphqlAnswer, type GraphqlLimits } from "./graphql.js";
import { historyFile } from "./history-file.js";
import type { QueryLimits } from "./query-limits.js";
import type { ResolverDeps } from "./resolver-deps.js";
import type { UrlSigner } from "../store/index.js";
import type { WandbRuns } from "./wandb-runs.js";

export interface Principal {
  entity: string;
}

/** Upload and download URLs stay valid this long (the SDK uses them at once). */
export const TRANSFER_URL_TTL_MS = 60 * 60 * 1000;

export interface WandbApiDeps {
  runs: WandbRuns;
  views: ArtifactViews;
  uploads: ArtifactUploads;
  signer: UrlSigner;
  /** Reported as the server's version (serverInfo). */
  serverVersion: string;
  /** What one GraphQL request may ask (query-limits.ts). */
  queryLimits: QueryLimits;
  /** The GraphQL cost each entity may spend per window. */
  costBudget: CostBudgetSettings;
}

/** What a download URL answers. */
export interface Download {
  /** Bytes answered: the range's length when a range is served. */
  size: number;
  chunks: AsyncIterable<Buffer>;
  /** Set when the request's byte range is served: answer 206, `Content-Range: bytes start-end/total`. */
  range?: { start: number; end: number; total: number };
}

/** Where an upload URL's body goes, known from its token before the body is read. */
export interface UploadTarget {
  /** The body may be at most this long (besides the server's body limit); null: no bound of its own. */
  maxBytes: number | null;
  /** Takes the body as it arrives (streamed into the blob store, or read and dropped), within `maxBytes`. */
  receive(content: AsyncIterable<Uint8Array>, maxBytes: number, signal: AbortSignal): Promise<void>;
}

export class WandbApi {
  private readonly limits: GraphqlLimits;

  constructor(private readonly deps: WandbApiDeps) {
    this.limits = { query: deps.queryLimits, budget: new CostBudget(deps.costBudget) };
  }

  graphql(principal: Principal, body: unknown, baseUrl: string): Promise<GraphqlAnswer> {
    const deps: ResolverDeps = { ...this.deps, entity: principal.entity, baseUrl, transferTtlMs: TRANSFER_URL_TTL_MS };
    return executeGraphql(body, deps, this.limits);
  }

  /** `POST /files/{entity}/{project}/{run}/file_stream`: history, summary, events, console, exit. */
  async fileStream(principal: Principal, entity: string, project: string, runId: string, body: unknown): Promise<Record<string, unknown>> {
    if (entity !== principal.entity) throw notFound(`run ${entity}/${project}/${runId} not found`);
    const found = await this.deps.runs.find(entity, project, runId);
    if (!found) throw notFound(`run ${entity}/${project}/${runId} not found (wandb.init creates it first)`);
    const request = objectOf(body, "the file stream request");
    const files = request.files === undefined ? {} : objectOf(request.files, "files");
    const chunk = (name: string): { offset: number; lines: string[] } | null => {
      const value = files[name];
      if (value === undefined) return null;
      const item = objectOf(value, `files.${name}`);
      const offset = typeof item.offset === "number" && Number.isSafeInteger(item.offset) && item.offset >= 0 ? item.offset : 0;
      if (!Array.isArray(item.content) || item.content.some((line) => typeof line !== "string")) throw badRequest(`files.${name}.content must be a list of strings`);
      return { offset, lines: item.content as string[] };
    };
    const summary = chunk("wandb-summary.json");
    const exitCode = request.complete === true ? (typeof request.exitcode === "number" ? request.exitcode : 0) : null;
    await this.deps.runs.recordStream(found, {
      history: chunk("wandb-history.jsonl"),
      events: chunk("wandb-events.jsonl")?.lines ?? [],
      logLines: chunk("output.log")?.lines.length ?? 0,
      summary: summary && summary.lines.length > 0 ? (summary.lines[summary.lines.length - 1] as string) : null,
      exitCode,
    });
    return { exitcode: null, limits: {} };
  }

  /**
   * What a `PUT` to an upload URL may send, from its token alone (signature and expiry checked),
   * so that a request without a valid token is refused before its body is read: an artifact
   * file, an artifact manifest (bounded by its signed size `s`), or a run file (kept nowhere).
   */
  uploadTarget(token: string): UploadTarget {
    const grant = this.deps.signer.verify(token);
    if (!grant) throw notFound("this upload URL is invalid or has expired; ask for a new one");
    const maxBytes = typeof grant.s === "number" && Number.isSafeInteger(grant.s) && grant.s >= 0 ? grant.s : null;
    const uploads = this.deps.uploads;
    if (grant.k === "artifact_file") return { maxBytes, receive: (content, limit, signal) => uploads.receiveFile(String(grant.a), String(grant.n), String(grant.m), content, limit, signal) };
    if (grant.k === "artifact_manifest") return { maxBytes, receive: (content, limit, signal) => uploads.receiveManifest(String(grant.a), content, limit, signal) };
    if (grant.k === "run_file")
      return {
        maxBytes,
        // Run files are kept nowhere: read through, so the client sees its upload succeed.
        receive: async (content) => {
          for await (const piece of content) void piece;
        },
      };
    throw notFound("this upload URL grants nothing");
  }

  /**
   * `GET` of a download URL: a file of a committed artifact version, its manifest, or a parquet
   * file of a run's history (history-file.ts). The URL is bound to the version it was issued for
   * (its creation time) and to the file's exact bytes (its blob): when either is gone, 404, never
   * other bytes. `rangeHeader` (the request's `Range`) asks for one byte range of it.
   */
  async download(token: string, rangeHeader?: string | null): Promise<Download> {
    const whole = await this.wholeFile(token);
    const range = parseByteRange(rangeHeader, whole.size);
    if (!range) return whole;
    return { size: range.end - range.start + 1, chunks: sliceChunks(whole.chunks, range), range: { ...range, total: whole.size } };
  }

  private async wholeFile(token: string): Promise<{ size: number; chunks: AsyncIterable<Buffer> }> {
    const grant = this.deps.signer.verify(token);
    if (grant?.k === "history") return historyFile(this.deps.runs, grant);
    if (!grant || (grant.k !== "download" && grant.k !== "manifest")) throw notFound("this download URL is invalid or has expired; ask for a new one");
    const found = await this.deps.views.byId(String(grant.e), String(grant.a));
    const view = found && (grant.c === undefined || found.createdAt.getTime() === grant.c) ? found : null;
    if (grant.k === "manifest") {
      if (!view) throw notFound("the artifact version this URL was issued for no longer exists");
      const manifest = Buffer.from(manifestJson(view));
      return { size: manifest.byteLength, chunks: (async function* () { yield manifest; })() };
    }
    const name = String(grant.n);
    const blob = view ? this.deps.views.blobOf(view, name) : null;
    const file = blob !== null && blob === grant.h && view ? await this.deps.views.openFile(view, name) : null;
    if (!file) throw notFound(`the file ${name} this URL was issued for no longer exists`);
    return { size: file.size, chunks: file.stream };
  }
}

function objectOf(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw badRequest(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}
