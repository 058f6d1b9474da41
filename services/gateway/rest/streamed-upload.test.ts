// Upload bodies streamed into a real blob store: multipart forms as a real client encodes them
// (undici's FormData, as fetch sends them), raw bodies, bodies over the limit, cut-off and
// malformed forms (400s that say what is wrong, nothing left in the store).
import { createHash } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../core/errors.js";
import { LocalBlobStore } from "../../store/blob-store/local-blob-store.js";
import { readBlob } from "../../store/index.js";
import { multipartBoundary } from "./multipart.js";
import { BodyTooLarge } from "./read-body.js";
import { streamUpload } from "./streamed-upload.js";

let root: string;
let store: LocalBlobStore;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "srl-upload-"));
  store = new LocalBlobStore(root);
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** A request as node:http hands it over: headers, then the body in pieces. */
function request(body: Buffer | Readable, headers: Record<string, string>): IncomingMessage {
  const stream = body instanceof Readable ? body : Readable.from([body.subarray(0, 7), body.subarray(7)]);
  return Object.assign(stream, { headers }) as unknown as IncomingMessage;
}

async function encode(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const response = new Response(form);
  return { body: Buffer.from(await response.arrayBuffer()), contentType: response.headers.get("content-type") ?? "" };
}

const stage = (content: AsyncIterable<Uint8Array>, options: { maxBytes: number; signal?: AbortSignal }) => store.write(content, options);
const upload = (req: IncomingMessage, limit = 1 << 20) => streamUpload(req, multipartBoundary(req.headers["content-type"]), limit, stage, new AbortController().signal);
const temporaryFiles = async () => (await readdir(join(root, "tmp")).catch(() => [])).length;

describe("streamed uploads", () => {
  it("stores a form's files as fetch encodes them, bytes intact and in order, with its fields", async () => {
    const form = new FormData();
    form.set("project", "demo");
    form.set("name", "naïve data");
    const binary = new Uint8Array([0, 13, 10, 45, 45, 255, 13, 10]); // CR LF "--" inside content
    form.append("files", new Blob(['{"messages":[]}\r\n']), "train.jsonl");
    form.append("files", new Blob([binary]), "C:\\data\\blob.bin");
    const { body, contentType } = await encode(form);
    const parsed = await upload(request(body, { "content-type": contentType }));
    expect(parsed.multipart).toBe(true);
    expect([...parsed.fields]).toEqual([["project", "demo"], ["name", "naïve data"]]);
    expect(parsed.files.map((f) => f.filename)).toEqual(["train.jsonl", "blob.bin"]);
    expect((await readBlob(store, parsed.files[0]!.sha256)).toString("utf8")).toBe('{"messages":[]}\r\n');
    expect([...(await readBlob(store, parsed.files[1]!.sha256))]).toEqual([...binary]);
    expect(parsed.files[1]).toMatchObject({ size: binary.length, md5: createHash("md5").update(binary).digest("base64") });
  });

  it("takes a raw body as one file, RFC 5987 file names, and an empty form", async () => {
    const raw = await upload(request(Buffer.from("line one\nline two\n"), { "content-type": "application/jsonl" }));
    expect(raw).toMatchObject({ multipart: false, files: [{ filename: null, size: 18 }] });
    const body = Buffer.from("--x\r\nContent-Disposition: form-data; name=\"f\"; filename*=UTF-8''d%C3%A9j%C3%A0.jsonl\r\n\r\nabc\r\n--x--\r\n");
    const named = await upload(request(body, { "content-type": "multipart/form-data; boundary=x" }));
    expect(named.files.map((f) => [f.filename, f.size])).toEqual([["déjà.jsonl", 3]]);
    expect((await upload(request(Buffer.from("--x--\r\n"), { "content-type": "multipart/form-data; boundary=x" }))).files).toEqual([]);
  });

  it("refuses a body over the limit while it arrives, from its declared length or its bytes, keeping nothing", async () => {
    const big = Buffer.alloc(3 << 20, 7);
    await expect(upload(request(big, { "content-type": "application/octet-stream", "content-length": String(big.length) }))).rejects.toBeInstanceOf(BodyTooLarge);
    await expect(upload(request(big, { "content-type": "application/octet-stream" }))).rejects.toBeInstanceOf(BodyTooLarge);
    const form = new FormData();
    form.append("files", new Blob([big]), "big.bin");
    const { body, contentType } = await encode(form);
    await expect(upload(request(body, { "content-type": contentType }))).rejects.toBeInstanceOf(BodyTooLarge);
    expect(await temporaryFiles()).toBe(0);
    for await (const blob of store.list()) expect(blob.size).toBeLessThan(1 << 20);
  });

  it("keeps nothing of a body cut off mid-file", async () => {
    const cut = new Readable({ read() {} });
    const req = request(cut, { "content-type": "application/octet-stream" });
    const pending = upload(req, 64 << 20);
    cut.push(Buffer.alloc(1 << 20, 1));
    setTimeout(() => cut.destroy(Object.assign(new Error("aborted"), { code: "ECONNRESET" })), 20);
    await expect(pending).rejects.toThrow(/aborted/);
    expect(await temporaryFiles()).toBe(0);
  });

  it("refuses malformed forms with a 400 that says what is wrong", async () => {
    const cases: [string, RegExp][] = [
      ["--x\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\nabc", /ends without its closing boundary/],
      ["--x\r\nContent-Disposition: form-data; name=\"f\"\r\nbroken header line\r\n\r\nabc\r\n--x--", /malformed|closing boundary/],
      ["--x\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--x\r\nContent-Disposition: form-data; name=a\r\n\r\n2\r\n--x--", /field "a" twice/],
      [`--x\r\nContent-Disposition: form-data; name=a\r\n\r\n${"v".repeat(70_000)}\r\n--x--`, /longer than/],
    ];
    for (const [body, message] of cases) {
      const caught = await upload(request(Buffer.from(body), { "content-type": "multipart/form-data; boundary=x" })).then(
        () => null,
        (error: unknown) => error,
      );
      expect(caught, body.slice(0, 60)).toBeInstanceOf(ApiError);
      expect((caught as ApiError).kind, body.slice(0, 60)).toBe("bad_request");
      expect((caught as Error).message, body.slice(0, 60)).toMatch(message);
    }
    expect(() => multipartBoundary("multipart/form-data")).toThrow(/without a boundary/);
    expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe("a b");
    expect(multipartBoundary("application/jsonl")).toBeNull();
  });
});
