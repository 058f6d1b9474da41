// Uploads the REST gateway streamed into the blob store as they arrived (a raw body or the file
// parts of a multipart form), handed to the handler in place of the request's `bytes` fields, so
// a file of tens of MB is never held in memory whole.
import { createContextKey } from "@connectrpc/connect";

export interface StagedFile {
  /** The multipart part's file name; null for a raw body (the request names it). */
  filename: string | null;
  /** The blob it is stored as: SHA-256 (hex), size, MD5 (base64). */
  sha256: string;
  size: number;
  md5: string;
}

/** Undefined: the request carries its files in its own fields (Connect, gRPC, JSON). */
export const stagedFilesKey = createContextKey<StagedFile[] | undefined>(undefined, { description: "uploads streamed into the blob store" });
