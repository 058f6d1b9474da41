// A real S3-compatible server for tests: the pinned Versity S3 Gateway (.tools/bin/versitygw, built
// by scripts/install-s3-server.sh) serving a fresh temporary directory on 127.0.0.1, with a random
// root key and one bucket, `srl-blobs`. Its log is versitygw.log beside the served directory.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, ListBucketsCommand, S3Client } from "@aws-sdk/client-s3";
import { errorMessage, freePort, hasExited, sleep, spawnLogged, tail, type ManagedChild } from "../../services/core/child-process.js";

export interface S3Server {
  /** A BLOB_STORE_URL for the bucket, under the prefix `test`. */
  url: string;
  /** What a service process needs to use it: BLOB_STORE_URL and the AWS_* credentials. */
  env: Record<string, string>;
  /** The root key, for tests that use the SDK directly. */
  credentials: { accessKeyId: string; secretAccessKey: string };
  endpoint: string;
  bucket: string;
  stop(): Promise<void>;
}

const repoRoot = join(import.meta.dirname, "..", "..");
const BIN = join(repoRoot, ".tools", "bin", "versitygw");
const BUCKET = "srl-blobs";
const READY_TIMEOUT_MS = 20_000;
const PORT_ATTEMPTS = 3;

export async function startS3Server(): Promise<S3Server> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`bash scripts/install-s3-server.sh\` (needs go) to build the S3 test server`);
  const dir = await mkdtemp(join(tmpdir(), "srl-s3-"));
  try {
    const root = join(dir, "data");
    await mkdir(root);
    const logFile = join(dir, "versitygw.log");
    const credentials = { accessKeyId: `test${randomBytes(8).toString("hex")}`, secretAccessKey: randomBytes(24).toString("base64url") };
    const { child, endpoint } = await startOnFreePort(root, logFile, credentials);
    try {
      const client = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials });
      try {
        await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
      } finally {
        client.destroy();
      }
    } catch (error) {
      await child.stop();
      throw error;
    }
    const url = `s3://${BUCKET}/test?endpoint=${endpoint}&path_style=true`;
    return {
      url,
      env: { BLOB_STORE_URL: url, AWS_ACCESS_KEY_ID: credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey, AWS_REGION: "us-east-1" },
      credentials,
      endpoint,
      bucket: BUCKET,
      async stop() {
        await child.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

async function startOnFreePort(root: string, logFile: string, credentials: { accessKeyId: string; secretAccessKey: string }): Promise<{ child: ManagedChild; endpoint: string }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    // The key goes in the environment, not the arguments, where any `ps` would show it.
    const child = spawnLogged(BIN, ["--port", `127.0.0.1:${port}`, "--quiet", "posix", root], logFile, {
      env: { ...process.env, ROOT_ACCESS_KEY_ID: credentials.accessKeyId, ROOT_SECRET_ACCESS_KEY: credentials.secretAccessKey },
    });
    const endpoint = `http://127.0.0.1:${port}`;
    try {
      await waitUntilAnswering(endpoint, credentials, child);
      return { child, endpoint };
    } catch (error) {
      await child.stop();
      const logTail = await tail(logFile);
      const thisRun = logTail.slice(logTail.lastIndexOf("\n--- "));
      // The port was free when picked, but another process may have taken it since.
      if (attempt < PORT_ATTEMPTS && /address already in use|EADDRINUSE/i.test(thisRun)) continue;
      throw new Error(`versitygw did not start: ${errorMessage(error)}\n--- ${logFile} (tail) ---\n${thisRun}`);
    }
  }
}

async function waitUntilAnswering(endpoint: string, credentials: { accessKeyId: string; secretAccessKey: string }, child: ManagedChild): Promise<void> {
  const client = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials, maxAttempts: 1 });
  const exited = child.exited.then((how) => {
    throw new Error(`it exited (${how})`);
  });
  exited.catch(() => undefined);
  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const answered = await Promise.race([
        client.send(new ListBucketsCommand({})).then(
          () => true,
          () => false,
        ),
        exited,
      ]);
      if (answered) return;
      if (hasExited(child.process)) await exited;
      if (Date.now() > deadline) throw new Error(`it did not answer at ${endpoint} within ${READY_TIMEOUT_MS / 1000} s`);
      await sleep(50);
    }
  } finally {
    client.destroy();
  }
}
