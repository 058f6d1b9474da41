// `npm run bench:blobs`: the blob store (services/store/blob-store/) through the real server over
// HTTP with a real API key, on each store: local files under DATA_DIR/blobs (the embedded default),
// then an S3-compatible store (versitygw, BLOB_STORE_URL=s3://...). For each:
// - upload and download MB/s: BENCH_UPLOADS (5) artifacts of 64 MiB random bytes, raw bodies in
//   and whole bodies out; the median of each;
// - small-read latency as storage grows: one 320-byte artifact downloaded BENCH_READS (200) times
//   in a row (after 10 warm-up reads), p50 and p95, with ~10 MB stored, then again once 32 MiB
//   artifacts have filled the store to BENCH_FILL_MB (2048); goal: p50 and p95 within 1.5x.
// The reference is what the service used before: GridFS on the embedded FerretDB, read with the
// driver's GridFSBucket.openDownloadStream directly (no HTTP, no server: less work per read than
// the blob stores are given), the same small-read measurement with ~10 MB and BENCH_GRIDFS_FILL_MB
// (512: filling GridFS is slow) stored. A GridFS measurement stops after BENCH_GRIDFS_READ_SECONDS
// (90) when reads are that slow (its warm-up after a sixth of that), and says how many it made.
// The blob stores' fill counts the 64 MiB uploads; BENCH_FILL_MB and BENCH_GRIDFS_FILL_MB are MiB.
// Prints each part's time, a table and the ratios (MB = 10^6 bytes). The servers (training worker
// off, no rate limit), databases and every temporary directory are removed at the end, failed or not.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { GridFSBucket, MongoClient, type ObjectId } from "mongodb";
import { startEmbeddedDatabase } from "../../services/store/launcher.js";
import { startIsolatedServer } from "../../test/support/isolated-server.js";
import { startS3Server } from "../../test/support/s3-server.js";
import { median, percentile } from "./stats.js";

const MiB = 2 ** 20;
const MB = 1e6;
const UPLOADS = Number(process.env.BENCH_UPLOADS ?? 5);
const UPLOAD_BYTES = 64 * MiB;
const SMALL_BYTES = 320;
const READS = Number(process.env.BENCH_READS ?? 200);
const WARM_UP_READS = 10;
/** What is stored before the first latency measurement: the small file and one filler file. */
const FIRST_FILLER_BYTES = 10 * MiB;
const FILL_FILE_BYTES = 32 * MiB;
const FILL_BYTES = Number(process.env.BENCH_FILL_MB ?? 2048) * MiB;
const GRIDFS_FILL_BYTES = Number(process.env.BENCH_GRIDFS_FILL_MB ?? 512) * MiB;
const GRIDFS_READ_SECONDS = Number(process.env.BENCH_GRIDFS_READ_SECONDS ?? 90);
const GOAL_RATIO = 1.5;

interface Latency {
  p50: number;
  p95: number;
  reads: number;
  storedBytes: number;
}

interface StoreFigures {
  name: string;
  uploadMBps: number;
  downloadMBps: number;
  small: Latency;
  large: Latency;
  seconds: Record<string, number>;
}

interface GridFsFigures {
  small: Latency;
  large: Latency;
  seconds: Record<string, number>;
}

const progress = (line: string) => process.stderr.write(`${line}\n`);
const seconds = (since: number) => (performance.now() - since) / 1000;
const mb = (bytes: number) => (bytes / MB).toFixed(0);

/** 32 MiB of random bytes, made distinct per use by a counter in its first bytes (the stores keep identical content once). */
function fillerContent(): (index: number, bytes: number) => Buffer {
  const base = randomBytes(FILL_FILE_BYTES);
  const tag = randomBytes(8).toString("hex");
  return (index, bytes) => {
    base.write(`${tag}-${String(index).padStart(8, "0")}`, 0, "latin1");
    return base.subarray(0, bytes);
  };
}

/**
 * READS reads in a row after the warm-up, or as many as `maxSeconds` allows (GridFS, whose reads
 * take seconds once it holds a few hundred MB; its warm-up stops after a sixth of that too).
 */
async function measureReads(label: string, read: () => Promise<void>, storedBytes: number, maxSeconds = Infinity): Promise<Latency> {
  progress(`${label}: ${READS} reads of the ${SMALL_BYTES}-byte file with ${mb(storedBytes)} MB stored`);
  const warmUpStarted = performance.now();
  for (let i = 0; i < WARM_UP_READS && (i === 0 || seconds(warmUpStarted) < maxSeconds / 6); i++) await read();
  const ms: number[] = [];
  const started = performance.now();
  while (ms.length < READS && seconds(started) < maxSeconds) {
    const t = performance.now();
    await read();
    ms.push(performance.now() - t);
  }
  const latency = { p50: percentile(ms, 50), p95: percentile(ms, 95), reads: ms.length, storedBytes };
  progress(`${label}: p50 ${latency.p50.toFixed(2)} ms, p95 ${latency.p95.toFixed(2)} ms over ${ms.length} reads`);
  return latency;
}

async function benchStore(name: string, env: Record<string, string>): Promise<StoreFigures> {
  const times: Record<string, number> = {};
  let started = performance.now();
  const isolated = await startIsolatedServer({ name: "bench-blobs", entity: "bench", env: { LOG_LEVEL: "warn", ENTITY_REQUESTS_PER_SECOND: "0", TRAINING_WORKER: "0", ...env } });
  try {
    const url = isolated.server.url;
    const auth = { authorization: `Bearer ${isolated.key}` };
    const whoami = await fetch(`${url}/v1/preview/whoami`, { headers: auth });
    if (whoami.status !== 200) throw new Error(`whoami answered ${whoami.status}: ${await whoami.text()}`);
    const entity = ((await whoami.json()) as { entity: string }).entity;
    times["server start"] = seconds(started);

    let stored = 0;
    const upload = async (artifact: string, body: Buffer): Promise<void> => {
      const response = await fetch(`${url}/v1/preview/artifacts?project=bench&name=${artifact}&filename=data.bin`, { method: "POST", headers: { ...auth, "content-type": "application/octet-stream" }, body });
      if (response.status !== 200) throw new Error(`uploading ${artifact} (${body.byteLength} bytes) answered ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
      stored += body.byteLength;
    };
    /** Downloads the whole file; its size. */
    const download = async (artifact: string): Promise<number> => {
      const response = await fetch(`${url}/v1/preview/artifacts/download?url=${encodeURIComponent(`wandb-artifact:///${entity}/bench/${artifact}:v0`)}&filename=data.bin`, { headers: auth });
      if (response.status !== 200 || !response.body) throw new Error(`downloading ${artifact} answered ${response.status}: ${await response.text()}`);
      let bytes = 0;
      for await (const chunk of response.body) bytes += chunk.byteLength;
      return bytes;
    };
    const readSmall = async () => {
      const bytes = await download("small");
      if (bytes !== SMALL_BYTES) throw new Error(`the small artifact came back with ${bytes} bytes, not ${SMALL_BYTES}`);
    };

    started = performance.now();
    progress(`${name}: one ${SMALL_BYTES}-byte artifact and ${mb(FIRST_FILLER_BYTES)} MB beside it`);
    const filler = fillerContent();
    let fillIndex = 0;
    await upload("small", randomBytes(SMALL_BYTES));
    await upload(`fill-${fillIndex}`, filler(fillIndex++, FIRST_FILLER_BYTES));
    const small = await measureReads(name, readSmall, stored);
    times["small reads, ~10 MB stored"] = seconds(started);

    started = performance.now();
    const uploadMBps: number[] = [];
    const downloadMBps: number[] = [];
    for (let n = 0; n < UPLOADS; n++) {
      const body = randomBytes(UPLOAD_BYTES);
      const t = performance.now();
      await upload(`up-${n}`, body);
      uploadMBps.push(UPLOAD_BYTES / MB / seconds(t));
      progress(`${name}: upload ${n + 1}/${UPLOADS}: ${uploadMBps[n]!.toFixed(0)} MB/s`);
    }
    for (let n = 0; n < UPLOADS; n++) {
      const t = performance.now();
      const bytes = await download(`up-${n}`);
      if (bytes !== UPLOAD_BYTES) throw new Error(`up-${n} came back with ${bytes} bytes, not ${UPLOAD_BYTES}`);
      downloadMBps.push(UPLOAD_BYTES / MB / seconds(t));
      progress(`${name}: download ${n + 1}/${UPLOADS}: ${downloadMBps[n]!.toFixed(0)} MB/s`);
    }
    times[`${UPLOADS} x 64 MiB up and down`] = seconds(started);

    started = performance.now();
    progress(`${name}: filling to ${mb(FILL_BYTES)} MB with ${FILL_FILE_BYTES / MiB} MiB artifacts (the uploads above count)`);
    let lastReport = stored;
    while (stored < FILL_BYTES) {
      await upload(`fill-${fillIndex}`, filler(fillIndex++, FILL_FILE_BYTES));
      if (stored - lastReport >= 256 * MiB || stored >= FILL_BYTES) {
        lastReport = stored;
        progress(`${name}: ${mb(stored)} MB stored (${seconds(started).toFixed(0)} s)`);
      }
    }
    times[`fill to ${mb(FILL_BYTES)} MB`] = seconds(started);

    started = performance.now();
    const large = await measureReads(name, readSmall, stored);
    times[`small reads, ~${mb(FILL_BYTES)} MB stored`] = seconds(started);
    return { name, uploadMBps: median(uploadMBps), downloadMBps: median(downloadMBps), small, large, seconds: times };
  } finally {
    await isolated.stop();
  }
}

async function benchGridFs(): Promise<GridFsFigures> {
  const times: Record<string, number> = {};
  let started = performance.now();
  const dataDir = await mkdtemp(join(tmpdir(), "srl-bench-gridfs-"));
  try {
    const database = await startEmbeddedDatabase({ dataDir, log: () => {}, prefer: "ferretdb" });
    const client = new MongoClient(database.uri);
    try {
      // The bucket the service used (services/store/blobs.ts before the blob store), default chunks of 255 KiB.
      const bucket = new GridFSBucket(client.db("bench"), { bucketName: "blobs" });
      times["database start"] = seconds(started);
      let stored = 0;
      const write = (filename: string, data: Buffer) =>
        new Promise<ObjectId>((resolve, reject) => {
          const upload = bucket.openUploadStream(filename);
          upload.once("finish", () => resolve(upload.id));
          upload.once("error", reject);
          upload.end(data);
          stored += data.byteLength;
        });
      const readSmall = (id: ObjectId) => async () => {
        let bytes = 0;
        for await (const chunk of bucket.openDownloadStream(id)) bytes += (chunk as Buffer).byteLength;
        if (bytes !== SMALL_BYTES) throw new Error(`the small GridFS file came back with ${bytes} bytes, not ${SMALL_BYTES}`);
      };

      started = performance.now();
      progress(`GridFS: one ${SMALL_BYTES}-byte file and ${mb(FIRST_FILLER_BYTES)} MB beside it`);
      const filler = fillerContent();
      let fillIndex = 0;
      const id = await write("small", randomBytes(SMALL_BYTES));
      await write(`fill-${fillIndex}`, filler(fillIndex++, FIRST_FILLER_BYTES));
      const small = await measureReads("GridFS", readSmall(id), stored, GRIDFS_READ_SECONDS);
      times["small reads, ~10 MB stored"] = seconds(started);

      started = performance.now();
      progress(`GridFS: filling to ${mb(GRIDFS_FILL_BYTES)} MB with ${FILL_FILE_BYTES / MiB} MiB files`);
      let lastReport = stored;
      while (stored < GRIDFS_FILL_BYTES) {
        await write(`fill-${fillIndex}`, filler(fillIndex++, FILL_FILE_BYTES));
        if (stored - lastReport >= 128 * MiB || stored >= GRIDFS_FILL_BYTES) {
          lastReport = stored;
          progress(`GridFS: ${mb(stored)} MB stored (${seconds(started).toFixed(0)} s)`);
        }
      }
      times[`fill to ${mb(GRIDFS_FILL_BYTES)} MB`] = seconds(started);

      started = performance.now();
      const large = await measureReads("GridFS", readSmall(id), stored, GRIDFS_READ_SECONDS);
      times[`small reads, ~${mb(GRIDFS_FILL_BYTES)} MB stored`] = seconds(started);
      return { small, large, seconds: times };
    } finally {
      await client.close();
      await database.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
const within = (l: { small: Latency; large: Latency }) => l.large.p50 / l.small.p50 <= GOAL_RATIO && l.large.p95 / l.small.p95 <= GOAL_RATIO;
const readsNote = (l: Latency) => (l.reads < READS ? ` (${l.reads} reads: ${GRIDFS_READ_SECONDS} s cap)` : "");

function printTimes(name: string, times: Record<string, number>): void {
  console.log(`  ${name}: ${Object.entries(times).map(([part, s]) => `${part} ${s.toFixed(1)} s`).join(", ")}`);
}

const benchStarted = performance.now();
console.log(
  `bench:blobs: ${UPLOADS} uploads and downloads of 64 MiB (random bytes, raw body) per store; a ${SMALL_BYTES}-byte artifact read ${READS} times in a row (after ${WARM_UP_READS} warm-up reads) with ~${mb(FIRST_FILLER_BYTES + SMALL_BYTES)} MB and with ~${mb(FILL_BYTES)} MB stored (${FILL_FILE_BYTES / MiB} MiB fill files); ${availableParallelism()} cores`,
);
const stores: StoreFigures[] = [];
stores.push(await benchStore("local files", {}));
printTimes("local files", stores[0]!.seconds);
const s3 = await startS3Server();
try {
  stores.push(await benchStore("S3 (versitygw)", s3.env));
} finally {
  await s3.stop();
}
printTimes("S3 (versitygw)", stores[1]!.seconds);
const gridFs = await benchGridFs();
printTimes("GridFS (reference)", gridFs.seconds);

console.log(`\nMB = 10^6 bytes; upload and download: median of ${UPLOADS}; latency in ms; "stored": bytes uploaded so far`);
console.log(`| store | upload MB/s | download MB/s | p50 / p95 at ~10 MB | p50 / p95 at the larger size | stored | p50 ratio | p95 ratio | within ${GOAL_RATIO}x |`);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const s of stores) {
  console.log(
    `| ${s.name} | ${s.uploadMBps.toFixed(0)} | ${s.downloadMBps.toFixed(0)} | ${ms(s.small.p50)} / ${ms(s.small.p95)} | ${ms(s.large.p50)} / ${ms(s.large.p95)} | ${mb(s.large.storedBytes)} MB | ${ratio(s.large.p50, s.small.p50)} | ${ratio(s.large.p95, s.small.p95)} | ${within(s) ? "yes" : "NO"} |`,
  );
}
console.log(
  `| GridFS on FerretDB (before; driver, no HTTP) | - | - | ${ms(gridFs.small.p50)} / ${ms(gridFs.small.p95)}${readsNote(gridFs.small)} | ${ms(gridFs.large.p50)} / ${ms(gridFs.large.p95)}${readsNote(gridFs.large)} | ${mb(gridFs.large.storedBytes)} MB | ${ratio(gridFs.large.p50, gridFs.small.p50)} | ${ratio(gridFs.large.p95, gridFs.small.p95)} | ${within(gridFs) ? "yes" : "NO"} |`,
);
console.log(`GridFS filled to ${mb(GRIDFS_FILL_BYTES)} MB only, not ${mb(FILL_BYTES)} MB: writing to it is slow (BENCH_GRIDFS_FILL_MB changes it).`);
for (const s of stores) {
  console.log(`GridFS at ${mb(gridFs.large.storedBytes)} MB / ${s.name} at ${mb(s.large.storedBytes)} MB: p50 ${ratio(gridFs.large.p50, s.large.p50)}, p95 ${ratio(gridFs.large.p95, s.large.p95)}`);
}
for (const s of stores) {
  console.log(`${s.name}: small-read latency at ${mb(s.large.storedBytes)} MB vs ~10 MB: p50 ${ratio(s.large.p50, s.small.p50)}, p95 ${ratio(s.large.p95, s.small.p95)} (goal ~1.00x): ${within(s) ? `within ${GOAL_RATIO}x` : `NOT within ${GOAL_RATIO}x`}`);
}
console.log(`total ${seconds(benchStarted).toFixed(0)} s`);
