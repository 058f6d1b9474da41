// Blobs in any S3-compatible object store (AWS S3, MinIO, Ceph, R2, versitygw...), chosen with
//
//   BLOB_STORE_URL=s3://BUCKET[/PREFIX]?endpoint=http://host:port&region=us-east-1&path_style=true
//
// `endpoint`: the store's address; absent, AWS S3 itself (region redirects followed). `region`:
// us-east-1 unless given. `path_style`: bucket in the path (http://host/BUCKET/key) rather than in
// the host name; true by default when an endpoint is given, false for AWS. Credentials come from
// the standard AWS chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE and its files,
// container and instance roles), never from the URL: a URL with a user or password is refused.
//
// Layout under PREFIX: blobs at `sha256/<hash>` (lowercase hex), writes in progress at
// `tmp/<uuid>`. A write streams through DigestingStream into a (multipart, for large content)
// upload to its temporary key; once size and digests check out, the temporary object is copied
// server-side to the blob's key and deleted. The copy is made even when the blob is already there:
// that renews its LastModified, which keeps the collector from deleting content just written again.
// Any failure removes the temporary object (and aborts its multipart upload); what a killed
// process leaves under tmp/ is removed by sweepTemporary. Reads check the bytes against the name.
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound,
  S3Client,
  S3ServiceException,
  UploadPartCopyCommand,
  type CompletedPart,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { contentStream, isBlobName, type BlobStore, type BlobWriteOptions, type ListedBlob, type OpenedBlob, type StoredBlob } from "./blob-store.js";
import { checkExpected, DigestingStream, verified } from "./digesting.js";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** S3's smallest part (but the last) and most parts in a multipart upload. */
const MIN_PART_BYTES = 5 * MiB;
const MAX_PARTS = 10_000;
/** Parts of a write are at most this large (memory: the upload holds up to 4 of them). */
const MAX_WRITE_PART_BYTES = 256 * MiB;
/** S3 copies at most 5 GiB in one CopyObject; larger blobs are copied in parts. */
const MAX_SINGLE_COPY_BYTES = 5 * GiB;
const COPY_PART_BYTES = 1 * GiB;

export interface S3BlobStoreOptions {
  bucket: string;
  /** Key prefix without leading or trailing slash; "" for the bucket's top. */
  prefix: string;
  /** The store's address (http(s)://host:port); undefined for AWS S3. */
  endpoint?: string;
  region: string;
  /** Bucket in the path rather than in the host name. */
  forcePathStyle: boolean;
  /** Explicit credentials (tests); otherwise the AWS default chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** How long a request may take until its response starts, sending its body included (default 120 s). */
  requestTimeoutMs?: number;
  /** Blobs larger than this are copied in parts of this size (default: S3's 5 GiB limit; tests lower it). */
  maxSingleCopyBytes?: number;
}

/** Reads `s3://BUCKET[/PREFIX]?endpoint=...&region=...&path_style=...` (see the header above). */
export function s3OptionsFromUrl(url: string): S3BlobStoreOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`BLOB_STORE_URL ${JSON.stringify(url)} is not a URL (expected s3://BUCKET[/PREFIX]?endpoint=http://host:port)`);
  }
  if (parsed.protocol !== "s3:") throw new Error(`BLOB_STORE_URL must start with s3://, not ${parsed.protocol}//`);
  if (parsed.username !== "" || parsed.password !== "") {
    throw new Error("BLOB_STORE_URL must not hold credentials: set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or a profile or role) instead");
  }
  const bucket = decodeURIComponent(parsed.hostname);
  if (bucket === "") throw new Error(`BLOB_STORE_URL ${JSON.stringify(url)} names no bucket (expected s3://BUCKET[/PREFIX])`);
  if (parsed.port !== "") throw new Error(`BLOB_STORE_URL ${JSON.stringify(url)}: the port belongs in ?endpoint=http://host:port, not after the bucket`);
  const prefix = decodeURIComponent(parsed.pathname).replace(/^\/+|\/+$/g, "");
  const known = new Set(["endpoint", "region", "path_style"]);
  for (const key of parsed.searchParams.keys()) {
    if (!known.has(key)) throw new Error(`BLOB_STORE_URL has an unknown parameter ${JSON.stringify(key)} (known: endpoint, region, path_style)`);
  }
  const endpoint = parsed.searchParams.get("endpoint") || undefined;
  if (endpoint !== undefined) {
    let endpointUrl: URL;
    try {
      endpointUrl = new URL(endpoint);
    } catch {
      throw new Error(`BLOB_STORE_URL's endpoint ${JSON.stringify(endpoint)} is not a URL (expected http://host:port)`);
    }
    if (endpointUrl.protocol !== "http:" && endpointUrl.protocol !== "https:") throw new Error(`BLOB_STORE_URL's endpoint must be http:// or https://, not ${endpointUrl.protocol}//`);
    if (endpointUrl.username !== "" || endpointUrl.password !== "") throw new Error("BLOB_STORE_URL's endpoint must not hold credentials: use the AWS credential chain");
  }
  const region = parsed.searchParams.get("region") || "us-east-1";
  const pathStyle = parsed.searchParams.get("path_style");
  let forcePathStyle = endpoint !== undefined;
  if (pathStyle !== null) {
    if (/^(true|1|yes)$/i.test(pathStyle)) forcePathStyle = true;
    else if (/^(false|0|no)$/i.test(pathStyle)) forcePathStyle = false;
    else throw new Error(`BLOB_STORE_URL's path_style must be true or false, not ${JSON.stringify(pathStyle)}`);
  }
  return { bucket, prefix, ...(endpoint !== undefined ? { endpoint } : {}), region, forcePathStyle };
}

export class S3BlobStore implements BlobStore {
  readonly description: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly blobsPrefix: string;
  private readonly temporaryPrefix: string;
  private readonly maxSingleCopyBytes: number;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    const base = options.prefix === "" ? "" : `${options.prefix}/`;
    this.blobsPrefix = `${base}sha256/`;
    this.temporaryPrefix = `${base}tmp/`;
    this.maxSingleCopyBytes = options.maxSingleCopyBytes ?? MAX_SINGLE_COPY_BYTES;
    this.description = `s3://${options.bucket}${options.prefix === "" ? "" : `/${options.prefix}`} at ${options.endpoint ?? `AWS S3 (${options.region})`}`;
    const config: S3ClientConfig = {
      region: options.region,
      forcePathStyle: options.forcePathStyle,
      // The SDK's default retries (3 attempts, backoff) stand; a request that hangs fails instead.
      requestHandler: { connectionTimeout: 10_000, requestTimeout: options.requestTimeoutMs ?? 120_000, throwOnRequestTimeout: true },
    };
    if (options.endpoint !== undefined) {
      config.endpoint = options.endpoint;
      // Many S3-compatible stores reject (or mishandle) the CRC checksums the SDK adds by default;
      // the bytes are checked against their SHA-256 name when read anyway.
      config.requestChecksumCalculation = "WHEN_REQUIRED";
      config.responseChecksumValidation = "WHEN_REQUIRED";
    } else {
      config.followRegionRedirects = true;
    }
    if (options.credentials) config.credentials = options.credentials;
    this.client = new S3Client(config);
  }

  async write(content: AsyncIterable<Uint8Array> | Uint8Array, options: BlobWriteOptions): Promise<StoredBlob> {
    const temporary = `${this.temporaryPrefix}${randomUUID()}`;
    const digesting = new DigestingStream(options.maxBytes);
    try {
      await this.upload(temporary, contentStream(content), digesting, options);
      const blob = digesting.result();
      checkExpected(blob, options);
      await this.copy(temporary, this.blobKey(blob.sha256), blob.size);
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: temporary })).catch(() => undefined); // swept later
      return blob;
    } catch (error) {
      await this.removeTemporary(temporary);
      throw error;
    }
  }

  async open(sha256: string): Promise<OpenedBlob | null> {
    if (!isBlobName(sha256)) return null;
    let response;
    try {
      response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.blobKey(sha256) }));
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    const body = response.Body;
    if (!(body instanceof Readable)) {
      throw new Error(`the S3 client returned a ${body === undefined ? "missing" : typeof body} body for blob ${sha256}, not a Node stream`);
    }
    const size = response.ContentLength ?? 0;
    return { size, stream: verified(body, sha256, size) };
  }

  async stat(sha256: string): Promise<ListedBlob | null> {
    if (!isBlobName(sha256)) return null;
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.blobKey(sha256) }));
      return { sha256, size: head.ContentLength ?? 0, modifiedAt: head.LastModified ?? new Date(0) };
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async deleteIfOlder(sha256: string, notAfter: Date): Promise<boolean> {
    const info = await this.stat(sha256);
    // Last-Modified has whole seconds: an object stamped 12:00:00 may have been written up to
    // 12:00:00.999, so it counts as older only when that whole second is before `notAfter`.
    if (!info || info.modifiedAt.getTime() + 1000 > notAfter.getTime()) return false;
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.blobKey(sha256) }));
    return true;
  }

  async *list(): AsyncIterable<ListedBlob> {
    for await (const object of this.listObjects(this.blobsPrefix)) {
      const name = object.key.slice(this.blobsPrefix.length);
      if (isBlobName(name)) yield { sha256: name, size: object.size, modifiedAt: object.modifiedAt };
    }
  }

  async sweepTemporary(before: Date): Promise<number> {
    let removed = 0;
    for await (const object of this.listObjects(this.temporaryPrefix)) {
      if (object.modifiedAt < before) {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: object.key }));
        removed++;
      }
    }
    for await (const upload of this.listUploads(this.temporaryPrefix)) {
      if (upload.initiated < before) {
        await this.abortUpload(upload.key, upload.uploadId);
        removed++;
      }
    }
    return removed;
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  private blobKey(sha256: string): string {
    return `${this.blobsPrefix}${sha256}`;
  }

  /**
   * Streams `source` through `digesting` into an upload to `key`: one PutObject for content up to
   * a part, a multipart upload beyond. The first failure wins (BlobTooLarge from the digesting
   * stream, the abort, the source's own error, an S3 error) and is what this throws; it returns or
   * throws only once the upload has settled, so no request of it is still writing afterwards.
   */
  private async upload(key: string, source: AsyncIterable<Uint8Array>, digesting: DigestingStream, options: BlobWriteOptions): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: digesting, ContentType: "application/octet-stream" },
      partSize: Math.min(MAX_WRITE_PART_BYTES, Math.max(MIN_PART_BYTES, Math.ceil(options.maxBytes / (MAX_PARTS - 100)))),
      queueSize: 4,
    });
    let failure: { error: unknown } | undefined;
    // Aborting ends the source (the pipeline's signal); the upload then fails on its input, finishes
    // the part it is sending and aborts its multipart upload itself. (Upload.abort() would reject at
    // once while a part, or the whole PutObject, could still land after our cleanup.)
    const piping = pipeline(source, digesting, options.signal ? { signal: options.signal } : {}).catch((error: unknown) => {
      failure ??= { error };
    });
    const uploading = upload.done().then(
      () => undefined,
      (error: unknown) => {
        failure ??= { error };
        // The upload no longer reads: end the pipeline rather than leave it waiting on backpressure.
        digesting.destroy(error instanceof Error ? error : new Error(String(error)));
      },
    );
    await Promise.all([piping, uploading]);
    if (failure) throw failure.error;
  }

  /** Server-side copy: CopyObject, or UploadPartCopy in parts past S3's single-copy limit. */
  private async copy(source: string, target: string, size: number): Promise<void> {
    const copySource = `${this.bucket}/${source.split("/").map(encodeURIComponent).join("/")}`;
    if (size <= this.maxSingleCopyBytes) {
      await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: target, CopySource: copySource, ContentType: "application/octet-stream" }));
      return;
    }
    const partBytes = Math.max(Math.ceil(size / MAX_PARTS), Math.min(this.maxSingleCopyBytes, COPY_PART_BYTES), MIN_PART_BYTES);
    const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: target, ContentType: "application/octet-stream" }));
    const uploadId = created.UploadId;
    if (uploadId === undefined) throw new Error(`the S3 store started a multipart copy to ${target} without an upload id`);
    try {
      const parts: CompletedPart[] = [];
      for (let start = 0, partNumber = 1; start < size; start += partBytes, partNumber++) {
        const end = Math.min(start + partBytes, size) - 1;
        const part = await this.client.send(
          new UploadPartCopyCommand({ Bucket: this.bucket, Key: target, UploadId: uploadId, PartNumber: partNumber, CopySource: copySource, CopySourceRange: `bytes=${start}-${end}` }),
        );
        const etag = part.CopyPartResult?.ETag;
        if (etag === undefined) throw new Error(`the S3 store copied part ${partNumber} of ${target} without an ETag`);
        parts.push({ PartNumber: partNumber, ETag: etag });
      }
      await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: target, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
    } catch (error) {
      await this.abortUpload(target, uploadId).catch(() => undefined);
      throw error;
    }
  }

  /** After a failed write: the temporary object and any multipart upload to it, best effort (sweepTemporary gets the rest). */
  private async removeTemporary(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
      for await (const upload of this.listUploads(key)) {
        if (upload.key === key) await this.abortUpload(key, upload.uploadId);
      }
    } catch {
      // left for sweepTemporary
    }
  }

  private async abortUpload(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }));
    } catch (error) {
      if (!(error instanceof S3ServiceException && error.name === "NoSuchUpload")) throw error;
    }
  }

  private async *listObjects(prefix: string): AsyncIterable<{ key: string; size: number; modifiedAt: Date }> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ...(token !== undefined ? { ContinuationToken: token } : {}) }));
      for (const object of page.Contents ?? []) {
        if (object.Key !== undefined) yield { key: object.Key, size: object.Size ?? 0, modifiedAt: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  private async *listUploads(prefix: string): AsyncIterable<{ key: string; uploadId: string; initiated: Date }> {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(keyMarker !== undefined ? { KeyMarker: keyMarker } : {}),
          ...(uploadIdMarker !== undefined ? { UploadIdMarker: uploadIdMarker } : {}),
        }),
      );
      for (const upload of page.Uploads ?? []) {
        if (upload.Key !== undefined && upload.UploadId !== undefined) yield { key: upload.Key, uploadId: upload.UploadId, initiated: upload.Initiated ?? new Date(0) };
      }
      if (!page.IsTruncated || (page.NextKeyMarker === undefined && page.NextUploadIdMarker === undefined)) return;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }
}

/** A missing object (GetObject's NoSuchKey, HeadObject's bodiless 404). */
function isMissing(error: unknown): boolean {
  return error instanceof NoSuchKey || error instanceof NotFound || (error instanceof S3ServiceException && (error.name === "NoSuchKey" || error.name === "NotFound"));
}
