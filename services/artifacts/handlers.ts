// The artifact store's RPC (on the Training service in the contract): upload a named, versioned
// set of files (SFT data) for the caller's entity. Downloads resolve checkpoints too, so they are the
// training service's (services/training/artifact-download.ts).
import { Training } from "../../gen/srl/v1/training_pb.js";
import { ApiError, badRequest } from "../core/errors.js";
import { defineHandlers, principalOf, stagedFilesKey } from "../core/rpc/index.js";
import type { BlobStore } from "../store/index.js";
import { artifactUrl, type ArtifactRecord, type Artifacts, type StoredFile } from "./store.js";

export function artifactsHandlers(deps: { artifacts: Artifacts; blobs: BlobStore; bodyLimitBytes: number }) {
  return defineHandlers(Training, {
    async createArtifact(request, context) {
      const principal = principalOf(context);
      const entity = request.entity ?? principal.entity;
      if (entity !== principal.entity) {
        throw new ApiError("permission_denied", `this API key belongs to entity "${principal.entity}" and cannot upload to "${entity}"`);
      }
      const defaultName = request.filename ?? "train.jsonl";
      // REST streamed the files into the blob store already; Connect and gRPC carry them in the message.
      const staged = context.values.get(stagedFilesKey);
      let files: StoredFile[];
      if (staged) {
        files = staged.map((file) => ({ filename: file.filename ?? defaultName, blob: file }));
        const empty = files.find((file) => file.blob.size === 0);
        if (empty) throw badRequest(`the artifact file ${empty.filename} is empty`);
      } else {
        const single = request.content.byteLength > 0 ? [{ filename: defaultName, content: request.content }] : [];
        if (single.length > 0 && request.files.length > 0) throw badRequest("give the artifact's files either as content or as files, not both");
        const given = single.length > 0 ? single : request.files.map((file) => ({ filename: file.filename, content: file.content }));
        const empty = given.find((file) => file.content.byteLength === 0);
        if (empty) throw badRequest(`the artifact file ${empty.filename} is empty`);
        deps.artifacts.checkFileNames(given.map((file) => file.filename));
        files = [];
        for (const file of given) files.push({ filename: file.filename, blob: await deps.blobs.write(file.content, { maxBytes: deps.bodyLimitBytes }) });
      }
      if (files.length === 0) throw badRequest("no file given: send content (with filename) or files");
      const record = await deps.artifacts.upload({
        entity,
        project: request.project,
        name: request.name,
        type: request.type ?? "dataset",
        version: request.version ?? null,
        files,
      });
      return artifactMessage(record);
    },
  });
}

function artifactMessage(record: ArtifactRecord) {
  return {
    id: record._id,
    entity: record.entity,
    project: record.project,
    name: record.name,
    version: record.version,
    type: record.type,
    url: artifactUrl(record),
    files: record.files.map((f) => ({ name: f.name, size: BigInt(f.size) })),
    createdAt: record.created_at.toISOString(),
  };
}
