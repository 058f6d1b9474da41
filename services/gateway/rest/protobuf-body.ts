// A REST body in protobuf's binary encoding (methods with `srl.v1.rest` `protobuf_body`, such as
// Tinker's forward_backward), optionally zstd-compressed. Node 20's zlib has no zstd, so fzstd (a
// small pure-JS decoder) inflates it, streamed so that a small body cannot expand past the limit.
import { fromBinary, type DescMessage, type Message } from "@bufbuild/protobuf";
import { Decompress } from "fzstd";
import { badRequest, validationError } from "../../core/errors.js";
import { BodyTooLarge } from "./read-body.js";

const PROTOBUF_TYPES = new Set(["application/x-protobuf", "application/protobuf", "application/vnd.google.protobuf"]);

/** Whether a Content-Type names protobuf's binary encoding. */
export function isProtobufContentType(contentType: string | null): boolean {
  return PROTOBUF_TYPES.has((contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "");
}

/** Whether an Accept header asks for protobuf's binary encoding. */
export function acceptsProtobuf(accept: string | null): boolean {
  return (accept ?? "").split(",").some((part) => isProtobufContentType(part));
}

/** The message of `desc` in `body`, inflated first per Content-Encoding (identity or zstd), at most `limit` bytes once inflated. */
export function decodeProtobufBody(desc: DescMessage, body: Buffer, contentEncoding: string | null, limit: number): Message {
  const encoding = (contentEncoding ?? "identity").trim().toLowerCase();
  let bytes: Uint8Array;
  if (encoding === "identity" || encoding === "") bytes = body;
  else if (encoding === "zstd") bytes = inflateZstd(body, limit);
  else throw badRequest(`Content-Encoding ${encoding} is not accepted here; send the body as is or zstd-compressed`);
  try {
    return fromBinary(desc, bytes);
  } catch (error) {
    throw validationError([{ type: "value_error", loc: ["body"], msg: `Value error, the body is not a valid ${desc.typeName} in protobuf's binary encoding: ${error instanceof Error ? error.message : String(error)}`, input: null }]);
  }
}

function inflateZstd(body: Buffer, limit: number): Uint8Array {
  const parts: Uint8Array[] = [];
  let size = 0;
  let ended = false;
  const stream = new Decompress((chunk, final) => {
    size += chunk.byteLength;
    if (size > limit) throw new BodyTooLarge(`request body exceeds the limit of ${limit} bytes once decompressed`);
    parts.push(chunk);
    if (final) ended = true;
  });
  try {
    // Fed in slices, so an expanding frame is stopped at the limit rather than inflated whole.
    const slice = 64 * 1024;
    for (let offset = 0; offset < body.length; offset += slice) stream.push(body.subarray(offset, offset + slice), offset + slice >= body.length);
    if (body.length === 0) stream.push(new Uint8Array(0), true);
  } catch (error) {
    if (error instanceof BodyTooLarge) throw error;
    throw badRequest(`the zstd-compressed body cannot be decompressed: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!ended && body.length > 0 && size === 0) throw badRequest("the zstd-compressed body is incomplete");
  return Buffer.concat(parts);
}
