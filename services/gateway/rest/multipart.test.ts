// The multipart parser on bodies encoded by a real client (undici's FormData, as fetch sends them)
// and on malformed ones.
import { describe, expect, it } from "vitest";
import { ApiError } from "../../core/errors.js";
import { multipartBoundary, parseMultipart } from "./multipart.js";

async function encode(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const response = new Response(form);
  return { body: Buffer.from(await response.arrayBuffer()), contentType: response.headers.get("content-type") ?? "" };
}

describe("multipart/form-data", () => {
  it("reads files and fields as fetch encodes them, bytes intact", async () => {
    const form = new FormData();
    form.set("project", "demo");
    form.set("name", "naïve data");
    const binary = new Uint8Array([0, 13, 10, 45, 45, 255, 13, 10]); // CR LF "--" inside content
    form.append("file", new Blob(['{"messages":[]}\r\n']), "train.jsonl");
    form.append("file", new Blob([binary]), "C:\\data\\blob.bin");
    const { body, contentType } = await encode(form);
    const boundary = multipartBoundary(contentType);
    expect(boundary).not.toBeNull();
    const parsed = parseMultipart(body, boundary as string);
    expect([...parsed.fields]).toEqual([["project", "demo"], ["name", "naïve data"]]);
    expect(parsed.files.map((f) => f.filename)).toEqual(["train.jsonl", "blob.bin"]);
    expect(parsed.files[0]?.content.toString("utf8")).toBe('{"messages":[]}\r\n');
    expect([...(parsed.files[1]?.content ?? [])]).toEqual([...binary]);
  });

  it("takes quoted boundaries, RFC 5987 file names and an empty form", () => {
    expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe("a b");
    expect(multipartBoundary("application/jsonl")).toBeNull();
    expect(multipartBoundary(null)).toBeNull();
    const body = Buffer.from("--x\r\nContent-Disposition: form-data; name=\"f\"; filename*=UTF-8''d%C3%A9j%C3%A0.jsonl\r\n\r\nabc\r\n--x--\r\n");
    expect(parseMultipart(body, "x").files).toEqual([{ filename: "déjà.jsonl", content: Buffer.from("abc") }]);
    expect(parseMultipart(Buffer.from("--x--\r\n"), "x")).toEqual({ files: [], fields: new Map() });
  });

  it("refuses malformed bodies with a 400 that says what is wrong", () => {
    const cases: [string, RegExp][] = [
      ["no delimiter at all", /no part delimited/],
      ["--x\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nabc", /without its closing boundary/],
      ["--x\r\nContent-Disposition: form-data; name=\"f\"", /no end of headers/],
      ["--x\r\nContent-Type: text/plain\r\n\r\nabc\r\n--x--", /Content-Disposition/],
      ["--x\r\nContent-Disposition: form-data\r\n\r\nabc\r\n--x--", /has no name/],
      ["--x\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--x\r\nContent-Disposition: form-data; name=a\r\n\r\n2\r\n--x--", /field "a" twice/],
    ];
    for (const [body, message] of cases) {
      let caught: unknown;
      try {
        parseMultipart(Buffer.from(body), "x");
      } catch (error) {
        caught = error;
      }
      expect(caught, body).toBeInstanceOf(ApiError);
      expect((caught as ApiError).kind, body).toBe("bad_request");
      expect((caught as Error).message, body).toMatch(message);
    }
    expect(() => multipartBoundary("multipart/form-data")).toThrow(/without a boundary/);
  });
});
