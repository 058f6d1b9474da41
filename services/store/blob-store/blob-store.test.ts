// One conformance suite for both blob stores: LocalBlobStore on a temporary directory and
// S3BlobStore on a real S3-compatible server (versitygw, test/support/s3-server.ts), each test on
// an empty store (a fresh directory, a fresh key prefix). Then what only the S3 store has: its URL,
// multipart uploads a killed write leaves, and the copy in parts past the single-copy limit.
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, S3Client, UploadPartCommand } from "@aws-sdk/client-s3";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startS3Server, type S3Server } from "../../../test/support/s3-server.js";
import { BlobDigestMismatch, BlobTooLarge, readBlob, type BlobStore, type ListedBlob } from "./blob-store.js";
import { LocalBlobStore } from "./local-blob-store.js";
import { S3BlobStore, s3OptionsFromUrl } from "./s3-blob-store.js";

const MiB = 1024 * 1024;
const LIMIT = 64 * MiB;

/** A store under test and what the tests do to it behind its back. */
interface Subject {
  store: BlobStore;
  /** Leaves a temporary object as a killed write would. */
  leaveTemporary(name: string): Promise<void>;
  /** What is under the store's temporary area (objects and, for S3, multipart uploads). */
  temporaries(): Promise<string[]>;
  /** Replaces a stored blob's bytes. */
  corrupt(sha256: string, bytes: Buffer): Promise<void>;
  dispose(): Promise<void>;
}

interface Kind {
  name: string;
  setup(): Promise<void>;
  subject(): Promise<Subject>;
  teardown(): Promise<void>;
}

const local: Kind = {
  name: "LocalBlobStore",
  async setup() {},
  async subject() {
    const root = await mkdtemp(join(tmpdir(), "srl-blobs-"));
    return {
      store: new LocalBlobStore(root),
      async leaveTemporary(name) {
        await mkdir(join(root, "tmp"), { recursive: true });
        await writeFile(join(root, "tmp", name), "partial");
      },
      temporaries: () => readdir(join(root, "tmp")).catch(() => []),
      corrupt: (sha256, bytes) => writeFile(join(root, "sha256", sha256.slice(0, 2), sha256), bytes),
      dispose: () => rm(root, { recursive: true, force: true }),
    };
  },
  async teardown() {},
};

let server: S3Server | undefined;
let admin: S3Client | undefined;
let prefixes = 0;

function s3(): { server: S3Server; admin: S3Client } {
  if (!server || !admin) throw new Error("the S3 server is not started");
  return { server, admin };
}

/** Objects and multipart uploads under a key prefix, as keys. */
async function s3Keys(prefix: string): Promise<string[]> {
  const { server, admin } = s3();
  const objects = await admin.send(new ListObjectsV2Command({ Bucket: server.bucket, Prefix: prefix }));
  const uploads = await admin.send(new ListMultipartUploadsCommand({ Bucket: server.bucket, Prefix: prefix }));
  return [...(objects.Contents ?? []).map((object) => object.Key ?? ""), ...(uploads.Uploads ?? []).map((upload) => `upload ${upload.Key ?? ""}`)];
}

/** A store on its own prefix of the test server's bucket, made from a BLOB_STORE_URL. */
function s3Store(prefix: string, extra: { maxSingleCopyBytes?: number } = {}): S3BlobStore {
  const { server } = s3();
  const url = server.url.replace("/test?", `/test/${prefix}?`);
  return new S3BlobStore({ ...s3OptionsFromUrl(url), credentials: server.credentials, ...extra });
}

const s3Kind: Kind = {
  name: "S3BlobStore",
  // One server for the whole file (stopped at its end), started by the first block that needs it.
  async setup() {
    if (server) return;
    server = await startS3Server();
    admin = new S3Client({ endpoint: server.endpoint, region: "us-east-1", forcePathStyle: true, credentials: server.credentials });
  },
  async subject() {
    const { server, admin } = s3();
    const prefix = `case${++prefixes}`;
    const base = `test/${prefix}/`;
    return {
      store: s3Store(prefix),
      async leaveTemporary(name) {
        await admin.send(new PutObjectCommand({ Bucket: server.bucket, Key: `${base}tmp/${name}`, Body: "partial" }));
      },
      temporaries: () => s3Keys(`${base}tmp/`),
      async corrupt(sha256, bytes) {
        await admin.send(new PutObjectCommand({ Bucket: server.bucket, Key: `${base}sha256/${sha256}`, Body: bytes }));
      },
      async dispose() {},
    };
  },
  async teardown() {},
};

afterAll(async () => {
  admin?.destroy();
  await server?.stop();
});

function digests(bytes: Buffer): { sha256: string; md5: string; size: number } {
  return { sha256: createHash("sha256").update(bytes).digest("hex"), md5: createHash("md5").update(bytes).digest("base64"), size: bytes.byteLength };
}

/** `count` random pieces of 1 MiB, and all of them together. */
function randomPieces(count: number): { pieces: Buffer[]; whole: Buffer } {
  const pieces = Array.from({ length: count }, () => randomBytes(MiB));
  return { pieces, whole: Buffer.concat(pieces) };
}

async function* streamOf(pieces: Buffer[], onPiece?: (index: number) => void): AsyncGenerator<Uint8Array> {
  for (const [index, piece] of pieces.entries()) {
    onPiece?.(index);
    await new Promise((resolve) => setImmediate(resolve));
    yield piece;
  }
}

async function listAll(store: BlobStore): Promise<ListedBlob[]> {
  const listed: ListedBlob[] = [];
  for await (const blob of store.list()) listed.push(blob);
  return listed;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([local, s3Kind])("$name", (kind) => {
  let subject: Subject;
  let store: BlobStore;

  beforeAll(() => kind.setup());
  afterAll(() => kind.teardown());
  beforeEach(async () => {
    subject = await kind.subject();
    store = subject.store;
  });
  afterEach(async () => {
    await store.close();
    await subject.dispose();
  });

  /** Nothing stored, nothing left over. */
  async function expectEmpty(): Promise<void> {
    expect(await listAll(store)).toEqual([]);
    expect(await subject.temporaries()).toEqual([]);
  }

  it("stores 0 bytes, 1 KiB and 20 MiB streamed, under their digests, and reads them back", async () => {
    const empty = Buffer.alloc(0);
    const small = randomBytes(1024);
    const { pieces, whole: large } = randomPieces(20);
    const stored = [
      await store.write(empty, { maxBytes: LIMIT }),
      await store.write(small, { maxBytes: LIMIT }),
      await store.write(streamOf(pieces), { maxBytes: LIMIT }),
    ];
    expect(stored).toEqual([digests(empty), digests(small), digests(large)]);
    for (const [index, bytes] of [empty, small, large].entries()) {
      const { sha256, size } = digests(bytes);
      const opened = await store.open(sha256);
      expect(opened?.size, `blob ${index}`).toBe(size);
      expect((await readBlob(store, sha256)).equals(bytes), `blob ${index} read back`).toBe(true);
      expect(await store.stat(sha256)).toMatchObject({ sha256, size });
      opened?.stream.destroy();
    }
    const listed = await listAll(store);
    expect(listed.map((blob) => blob.sha256).sort()).toEqual(stored.map((blob) => blob.sha256).sort());
    for (const blob of listed) {
      expect(blob.size).toBe(stored.find((each) => each.sha256 === blob.sha256)?.size);
      expect(blob.modifiedAt.getTime()).toBeGreaterThan(Date.now() - 60_000);
    }
    expect(await subject.temporaries()).toEqual([]);
  });

  it("stores identical content once", async () => {
    const bytes = randomBytes(4096);
    const first = await store.write(bytes, { maxBytes: LIMIT, md5: digests(bytes).md5, size: bytes.byteLength });
    const second = await store.write(streamOf([bytes]), { maxBytes: LIMIT });
    expect(second).toEqual(first);
    expect((await listAll(store)).map((blob) => blob.sha256)).toEqual([first.sha256]);
    expect(await subject.temporaries()).toEqual([]);
  });

  it("writing content already stored renews its time, so a collector deciding before keeps it", async () => {
    const bytes = randomBytes(1024);
    const { sha256 } = await store.write(bytes, { maxBytes: LIMIT });
    await sleep(1_100); // S3's Last-Modified has whole seconds
    const decided = new Date();
    await sleep(20); // file times come from a coarse clock
    await store.write(bytes, { maxBytes: LIMIT });
    expect(await store.deleteIfOlder(sha256, decided)).toBe(false);
    expect((await store.stat(sha256))?.modifiedAt.getTime()).toBeGreaterThanOrEqual(decided.getTime() - 1_000);
    expect((await readBlob(store, sha256)).equals(bytes)).toBe(true);
  });

  it("opens nothing for a missing or malformed name", async () => {
    await store.write(Buffer.from("something"), { maxBytes: LIMIT });
    const missing = digests(Buffer.from("not stored")).sha256;
    for (const name of [missing, missing.toUpperCase(), missing.slice(1), "../../etc/passwd", "", `${missing}/x`]) {
      expect(await store.open(name), name).toBeNull();
      expect(await store.stat(name), name).toBeNull();
      expect(await store.deleteIfOlder(name, new Date(Date.now() + 60_000)), name).toBe(false);
    }
  });

  it("refuses content over maxBytes with BlobTooLarge and keeps nothing", async () => {
    await expect(store.write(randomBytes(2000), { maxBytes: 1999 })).rejects.toBeInstanceOf(BlobTooLarge);
    // Past the first part of a multipart upload: the upload is aborted too.
    const { pieces } = randomPieces(14);
    await expect(store.write(streamOf(pieces), { maxBytes: 12 * MiB })).rejects.toThrow(BlobTooLarge);
    await expectEmpty();
    // Exactly at the limit is fine.
    const exact = randomBytes(2000);
    expect(await store.write(exact, { maxBytes: 2000 })).toEqual(digests(exact));
  });

  it("refuses content whose MD5 or size is not the announced one with BlobDigestMismatch and keeps nothing", async () => {
    const bytes = randomBytes(3000);
    const { md5, size } = digests(bytes);
    const otherMd5 = digests(Buffer.from("other")).md5;
    await expect(store.write(bytes, { maxBytes: LIMIT, md5: otherMd5 })).rejects.toBeInstanceOf(BlobDigestMismatch);
    await expect(store.write(bytes, { maxBytes: LIMIT, size: size + 1 })).rejects.toBeInstanceOf(BlobDigestMismatch);
    const { pieces } = randomPieces(7);
    await expect(store.write(streamOf(pieces), { maxBytes: LIMIT, size: 7 * MiB - 1 })).rejects.toBeInstanceOf(BlobDigestMismatch);
    await expectEmpty();
    expect(await store.write(bytes, { maxBytes: LIMIT, md5, size })).toEqual(digests(bytes));
  });

  it("keeps nothing of a write aborted mid-stream", async () => {
    const controller = new AbortController();
    const { pieces } = randomPieces(16);
    const writing = store.write(
      streamOf(pieces, (index) => {
        if (index === 9) controller.abort();
      }),
      { maxBytes: LIMIT, signal: controller.signal },
    );
    await expect(writing).rejects.toMatchObject({ name: "AbortError" });
    await expect(store.write(Buffer.from("late"), { maxBytes: LIMIT, signal: AbortSignal.abort() })).rejects.toMatchObject({ name: "AbortError" });
    await expectEmpty();
  });

  it("deletes a blob only when it was written before the date given", async () => {
    const bytes = randomBytes(1024);
    const { sha256 } = await store.write(bytes, { maxBytes: LIMIT });
    expect(await store.deleteIfOlder(sha256, new Date(Date.now() - 60_000))).toBe(false);
    expect((await readBlob(store, sha256)).equals(bytes)).toBe(true);
    expect(await store.deleteIfOlder(sha256, new Date(Date.now() + 60_000))).toBe(true);
    expect(await store.open(sha256)).toBeNull();
    expect(await store.stat(sha256)).toBeNull();
    expect(await store.deleteIfOlder(sha256, new Date(Date.now() + 60_000))).toBe(false);
    await expectEmpty();
  });

  it("sweeps what an interrupted write left once it is older than the cutoff, and nothing else", async () => {
    const kept = await store.write(randomBytes(100), { maxBytes: LIMIT });
    await subject.leaveTemporary("left-by-a-killed-write");
    expect(await subject.temporaries()).toHaveLength(1);
    expect(await store.sweepTemporary(new Date(Date.now() - 60_000))).toBe(0);
    expect(await subject.temporaries()).toHaveLength(1);
    expect(await store.sweepTemporary(new Date(Date.now() + 60_000))).toBe(1);
    expect(await subject.temporaries()).toEqual([]);
    expect((await listAll(store)).map((blob) => blob.sha256)).toEqual([kept.sha256]);
  });

  it("fails the read of a blob whose stored bytes are not its name", async () => {
    const bytes = randomBytes(1024);
    const { sha256 } = await store.write(bytes, { maxBytes: LIMIT });
    const other = Buffer.from(bytes);
    other[100] = (other[100] ?? 0) ^ 0xff;
    await subject.corrupt(sha256, other);
    await expect(readBlob(store, sha256)).rejects.toThrow(/damaged/);
    await subject.corrupt(sha256, bytes.subarray(0, 1000));
    await expect(readBlob(store, sha256)).rejects.toThrow(/damaged/);
  });
});

describe("S3BlobStore specifics", () => {
  beforeAll(() => s3Kind.setup());

  it("reads BLOB_STORE_URL", () => {
    expect(s3OptionsFromUrl("s3://my-bucket")).toEqual({ bucket: "my-bucket", prefix: "", region: "us-east-1", forcePathStyle: false });
    expect(s3OptionsFromUrl("s3://my-bucket/a/b/?region=eu-west-3&path_style=true")).toEqual({ bucket: "my-bucket", prefix: "a/b", region: "eu-west-3", forcePathStyle: true });
    expect(s3OptionsFromUrl("s3://b/p?endpoint=http://127.0.0.1:9000")).toEqual({ bucket: "b", prefix: "p", endpoint: "http://127.0.0.1:9000", region: "us-east-1", forcePathStyle: true });
    expect(s3OptionsFromUrl("s3://b?endpoint=https://s3.example.com&path_style=false").forcePathStyle).toBe(false);
    expect(() => s3OptionsFromUrl("http://b/p")).toThrow(/s3:\/\//);
    expect(() => s3OptionsFromUrl("s3://key:secret@b/p")).toThrow(/credentials/);
    expect(() => s3OptionsFromUrl("s3:///p")).toThrow(/bucket/);
    expect(() => s3OptionsFromUrl("s3://b?endpont=http://x")).toThrow(/unknown parameter/);
    expect(() => s3OptionsFromUrl("s3://b?endpoint=ftp://x")).toThrow(/http/);
    expect(() => s3OptionsFromUrl("s3://b?path_style=maybe")).toThrow(/path_style/);
    expect(new S3BlobStore(s3OptionsFromUrl("s3://b/p?endpoint=http://127.0.0.1:9000")).description).toBe("s3://b/p at http://127.0.0.1:9000");
  });

  it("aborts the multipart uploads a killed write left under tmp/ once older than the cutoff", async () => {
    const { server, admin } = s3();
    const store = s3Store("killed-multipart");
    try {
      const key = "test/killed-multipart/tmp/left-by-a-killed-write";
      const { UploadId } = await admin.send(new CreateMultipartUploadCommand({ Bucket: server.bucket, Key: key }));
      await admin.send(new UploadPartCommand({ Bucket: server.bucket, Key: key, UploadId, PartNumber: 1, Body: randomBytes(5 * MiB) }));
      expect(await s3Keys("test/killed-multipart/")).toEqual([`upload ${key}`]);
      expect(await store.sweepTemporary(new Date(Date.now() - 60_000))).toBe(0);
      expect(await store.sweepTemporary(new Date(Date.now() + 60_000))).toBe(1);
      expect(await s3Keys("test/killed-multipart/")).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("copies a blob past the single-copy limit in parts", async () => {
    const store = s3Store("copy-in-parts", { maxSingleCopyBytes: 5 * MiB });
    try {
      const { pieces, whole } = randomPieces(12);
      const stored = await store.write(streamOf(pieces), { maxBytes: LIMIT });
      expect(stored).toEqual(digests(whole));
      expect((await readBlob(store, stored.sha256)).equals(whole)).toBe(true);
      expect(await s3Keys("test/copy-in-parts/")).toEqual([`test/copy-in-parts/sha256/${stored.sha256}`]);
    } finally {
      await store.close();
    }
  });
});
