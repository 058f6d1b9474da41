// What the GraphQL resolvers and the objects they build read: the caller's entity, where the
// service is reached, and the stores behind runs and artifacts.
import type { ArtifactUploads } from "./artifact-uploads.js";
import type { ArtifactViews } from "./artifact-views.js";
import type { UrlSigner } from "../store/index.js";
import type { WandbRuns } from "./wandb-runs.js";

export interface ResolverDeps {
  entity: string;
  baseUrl: string;
  runs: WandbRuns;
  views: ArtifactViews;
  uploads: ArtifactUploads;
  signer: UrlSigner;
  transferTtlMs: number;
  serverVersion: string;
}
