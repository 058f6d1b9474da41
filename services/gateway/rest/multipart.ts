// Parses a buffered `multipart/form-data` body (RFC 7578) into its file parts and text fields.
// The body has already passed the size limit, so a buffer parser is enough; errors are the
// client's (400) and say what is wrong with the form.
import { badRequest } from "../../core/errors.js";

export interface MultipartForm {
  files: { filename: string; content: Buffer }[];
  fields: Map<string, string>;
}

/** The boundary of a multipart/form-data content type, or null for any other content type. */
export function multipartBoundary(contentType: string | null | undefined): string | null {
  if (!contentType || !/^\s*multipart\/form-data\s*(;|$)/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary) throw badRequest("multipart/form-data without a boundary parameter");
  return boundary;
}

export function parseMultipart(body: Buffer, boundary: string): MultipartForm {
  const delimiter = Buffer.from(`--${boundary}`);
  const form: MultipartForm = { files: [], fields: new Map() };
  let start = body.indexOf(delimiter);
  if (start < 0) throw badRequest("the multipart body has no part delimited by its boundary");
  for (;;) {
    let cursor = start + delimiter.length;
    if (body.subarray(cursor, cursor + 2).toString("latin1") === "--") return form; // closing delimiter
    cursor = skipLineEnd(body, cursor);
    const headerEnd = body.indexOf("\r\n\r\n", cursor);
    if (headerEnd < 0) throw badRequest("a multipart part has no end of headers");
    const headers = parseHeaders(body.subarray(cursor, headerEnd).toString("utf8"));
    const contentStart = headerEnd + 4;
    const next = body.indexOf(Buffer.concat([Buffer.from("\r\n"), delimiter]), contentStart);
    if (next < 0) throw badRequest("the multipart body ends without its closing boundary");
    addPart(form, headers, body.subarray(contentStart, next));
    start = next + 2;
  }
}

function skipLineEnd(body: Buffer, at: number): number {
  // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
  let cursor = at;
  while (body[cursor] === 0x20 || body[cursor] === 0x09) cursor++;
  if (body[cursor] !== 0x0d || body[cursor + 1] !== 0x0a) throw badRequest("a multipart boundary is not followed by a line break");
  return cursor + 2;
}

function parseHeaders(text: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

function addPart(form: MultipartForm, headers: Map<string, string>, content: Buffer): void {
  const disposition = headers.get("content-disposition");
  if (!disposition || !/^form-data\s*(;|$)/i.test(disposition)) throw badRequest("a multipart part lacks Content-Disposition: form-data");
  const params = dispositionParams(disposition);
  const name = params.get("name");
  if (name === undefined) throw badRequest("a multipart part has no name");
  const filename = params.get("filename*") ?? params.get("filename");
  if (filename !== undefined) {
    // Some clients send a path; only the last segment names the file.
    form.files.push({ filename: filename.split(/[\\/]/).at(-1) ?? filename, content: Buffer.from(content) });
  } else {
    if (form.fields.has(name)) throw badRequest(`the multipart form has the field "${name}" twice`);
    form.fields.set(name, content.toString("utf8"));
  }
}

function dispositionParams(disposition: string): Map<string, string> {
  const params = new Map<string, string>();
  const pattern = /;\s*([A-Za-z0-9_*-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (const match of disposition.matchAll(pattern)) {
    const key = (match[1] ?? "").toLowerCase();
    const quoted = match[2];
    // Browsers and undici escape `"` as %22 (WHATWG) and leave backslashes alone (Windows paths);
    // older clients send \".
    const value = quoted !== undefined ? quoted.replace(/\\"/g, '"').replace(/%22/g, '"') : (match[3] ?? "").trim();
    // RFC 5987 extended value: charset''percent-encoded.
    params.set(key, key.endsWith("*") ? decodeExtended(value) : value);
  }
  return params;
}

function decodeExtended(value: string): string {
  const match = /^([^']*)'[^']*'(.*)$/.exec(value);
  if (!match) return value;
  try {
    return decodeURIComponent(match[2] ?? "");
  } catch {
    throw badRequest(`a multipart file name is not valid percent-encoding: ${value}`);
  }
}
