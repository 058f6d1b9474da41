// The artifact store's RPC (on the Training service in the contract): upload a named, versioned
// set of files (SFT data) for the caller's entity. Downloads resolve checkpoints too, so they are the
// training service's (services/training/artifact-download.ts).
import { Training } from "../../gen/srl/v1/training_pb.js";
import { ApiError, badRequest } from "../core/errors.js";
import { defineHandlers, principalOf } from "../core/rpc/index.js";
import { artifactUrl, type ArtifactRecord, type Artifacts } from "./store.js";

export function artifactsHandlers(deps: { artifacts: Artifacts }) {
  return defineHandlers(Training, {
    async createArtifact(request, context) {
      const principal = principalOf(context);
      const entity = request.entity ?? principal.entity;
      if (entity !== principal.entity) {
        throw new ApiError("permission_denied", `this API key belongs to entity "${principal.entity}" and cannot upload to "${entity}"`);
      }
      const single = request.content.byteLength > 0 ? [{ filename: request.filename ?? "train.jsonl", content: request.content }] : [];
      if (single.length > 0 && request.files.length > 0) throw badRequest("give the artifact's files either as content or as files, not both");
      const files = single.length > 0 ? single : request.files.map((file) => ({ filename: file.filename, content: file.content }));
      if (files.length === 0) throw badRequest("no file given: send content (with filename) or files");
      const empty = files.find((file) => file.content.byteLength === 0);
      if (empty) throw badRequest(`the artifact file ${empty.filename} is empty`);
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
