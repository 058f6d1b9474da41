// Uploads SFT data to the artifact store with progress: XMLHttpRequest (fetch reports no upload
// progress) POSTing the file itself as the raw body of CreateArtifact's REST route, so a large file
// streams from disk instead of being read into memory.
import { apiKey } from "../api.js";

/** What CreateArtifact answers (REST JSON, snake_case), the fields the page uses. */
export interface UploadedArtifact {
  name: string;
  version: number;
  url: string;
  files: { name: string; size: number }[];
}

export interface UploadTarget {
  project: string;
  name: string;
}

/** Resolves with the new artifact version; rejects with a message a person can act on. */
export function uploadDataset(body: Blob, target: UploadTarget, onProgress: (fraction: number) => void, signal: AbortSignal): Promise<UploadedArtifact> {
  const query = new URLSearchParams({ project: target.project, name: target.name, type: "dataset", filename: "train.jsonl" });
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${location.origin}/v1/preview/artifacts?${query}`);
    const key = apiKey.get();
    if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
    xhr.setRequestHeader("Content-Type", "application/jsonl");
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      if (xhr.status === 200) {
        onProgress(1);
        resolve(JSON.parse(xhr.responseText) as UploadedArtifact);
      } else reject(new Error(uploadError(xhr.status, xhr.responseText)));
    };
    xhr.onerror = () => reject(new Error("The upload was cut off (network error). Check the connection and upload again."));
    xhr.onabort = () => reject(new DOMException("The upload was stopped.", "AbortError"));
    signal.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(body);
  });
}

/** The server's `{"detail": …}` as one sentence, with what to do for the statuses a person can fix. */
function uploadError(status: number, text: string): string {
  let detail = text;
  try {
    const body = JSON.parse(text) as { detail?: unknown };
    if (typeof body.detail === "string") detail = body.detail;
    else if (Array.isArray(body.detail)) detail = body.detail.map((item: { loc?: unknown[]; msg?: string }) => `${(item.loc ?? []).join(".")}: ${item.msg ?? ""}`).join("; ");
  } catch {
    // not JSON (a proxy's page): the text as it came
  }
  if (status === 401) return `The server refused the API key (${detail}). Sign out and sign in with a valid key.`;
  if (status === 413) return `The file is larger than this server accepts (${detail}). Split it, or ask the operator to raise BODY_LIMIT_BYTES.`;
  return `Upload failed (HTTP ${status}): ${detail || "no details"}`;
}
