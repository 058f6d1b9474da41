// Reads a request body up to a limit; past it the request is refused (413) without buffering more.
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

export class BodyTooLarge extends Error {}

/**
 * The body as it arrives, for streaming it somewhere (uploads): the same limit, checked against the
 * declared length before anything is read and against what arrives as it does.
 */
export async function* limitedBody(req: IncomingMessage | Http2ServerRequest, limit: number): AsyncGenerator<Buffer> {
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (declared > limit) throw new BodyTooLarge(`request body of ${declared} bytes exceeds the limit of ${limit} bytes`);
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLarge(`request body exceeds the limit of ${limit} bytes`);
    yield chunk;
  }
}

/** The whole body, within the limit. */
export async function readBody(req: IncomingMessage | Http2ServerRequest, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of limitedBody(req, limit)) chunks.push(chunk);
  return Buffer.concat(chunks);
}
