// Upload routes (a `bytes` body: one file as the raw body, or several as a multipart form) stream
// each file into the blob store as it arrives, so memory holds a piece at a time, whatever the
// size; the handler gets the stored files (core/rpc stagedFilesKey). Multipart forms are parsed
// by busboy. A body over the limit is refused with 413 as soon as it passes it; a body cut off or
// refused leaves nothing stored (the blob store removes a write that did not finish).
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import busboy from "busboy";
import { badRequest } from "../../core/errors.js";
import type { StagedFile } from "../../core/rpc/index.js";
import { BodyTooLarge, limitedBody } from "./read-body.js";

/** Stores content (the blob store's write): its SHA-256, size and MD5. */
export type StageBlob = (content: AsyncIterable<Uint8Array>, options: { maxBytes: number; signal?: AbortSignal }) => Promise<{ sha256: string; size: number; md5: string }>;

export interface StreamedUpload {
  files: StagedFile[];
  /** A multipart form's text fields. */
  fields: Map<string, string>;
  multipart: boolean;
}

/** Text fields of an upload form are a few names and numbers. */
const FIELD_LIMIT_BYTES = 64 * 1024;
const MAX_PARTS = 1_000;

type Request = IncomingMessage | Http2ServerRequest;

/** The body as one file (boundary null) or as a multipart form with that boundary, stored. */
export async function streamUpload(req: Request, boundary: string | null, limit: number, stage: StageBlob, signal: AbortSignal): Promise<StreamedUpload> {
  if (boundary === null) {
    const blob = await stage(limitedBody(req, limit), { maxBytes: limit, signal });
    return { files: blob.size > 0 ? [{ filename: null, ...blob }] : [], fields: new Map(), multipart: false };
  }
  return streamForm(req, limit, stage, signal);
}

async function streamForm(req: Request, limit: number, stage: StageBlob, signal: AbortSignal): Promise<StreamedUpload> {
  const form: StreamedUpload = { files: [], fields: new Map(), multipart: true };
  const parser = busboy({ headers: req.headers as Record<string, string>, limits: { fieldSize: FIELD_LIMIT_BYTES, parts: MAX_PARTS }, defParamCharset: "utf8" });
  const stored: Promise<void>[] = [];
  let formError: Error | null = null;
  const fail = (error: Error) => {
    formError ??= error;
    parser.destroy(error);
  };
  const files: StagedFile[] = [];
  parser.on("file", (_name, file, info) => {
    // Files are stored as the form carries them (busboy reads on as each is consumed), kept in its order.
    const index = stored.length;
    // Busboy fails the file itself when the form ends mid-file; that is reported through fail().
    file.once("error", (error: Error) => fail(malformed(error)));
    stored.push(
      stage(file, { maxBytes: limit, signal })
        .then((blob) => {
          files[index] = { filename: info.filename || "file", ...blob };
        })
        .catch((error: unknown) => {
          file.resume();
          fail(error instanceof Error ? error : new Error(String(error)));
        }),
    );
  });
  parser.on("field", (name, value, info) => {
    if (info.valueTruncated) fail(badRequest(`the multipart field "${name}" is longer than ${FIELD_LIMIT_BYTES} bytes`));
    else if (form.fields.has(name)) fail(badRequest(`the multipart form has the field "${name}" twice`));
    else form.fields.set(name, value);
  });
  parser.on("partsLimit", () => fail(badRequest(`the multipart form has more than ${MAX_PARTS} parts`)));
  try {
    await pipeline(Readable.from(limitedBody(req, limit)), parser);
  } catch (error) {
    // What the body did wrong first (too large, cut off) says more than the parser's complaint.
    formError = error instanceof BodyTooLarge ? error : (formError ?? malformed(error));
  }
  await Promise.all(stored);
  if (formError) throw formError;
  form.files = files;
  return form;
}

function malformed(error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (message === "Unexpected end of form") return badRequest("the multipart body ends without its closing boundary");
  // busboy's own complaints ("Unexpected end of form", "Malformed part header") are the client's.
  return /form|part|boundary|header/i.test(message) && !/ECONNRESET|aborted/i.test(message) ? badRequest(`the multipart body is malformed: ${message}`) : error instanceof Error ? error : new Error(message);
}
