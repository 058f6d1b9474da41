// `training_data_url` of SFT jobs: `wandb-artifact:///{entity}/{project}/{name}:v{N}|latest` (two
// slashes tolerated) naming an artifact of the caller's entity, or an https URL on a host the
// operator allows. Resolution checks the data exists, so a job is never queued on data that
// cannot be read.
import { badRequest } from "../core/errors.js";
import type { ArtifactRecord, Artifacts } from "../artifacts/index.js";

export interface ArtifactRef {
  entity: string;
  project: string;
  name: string;
  /** null = latest */
  version: number | null;
}

export function parseArtifactUrl(url: string): ArtifactRef | { https: URL } {
  if (url.startsWith("https://")) return { https: new URL(url) };
  const match = /^wandb-artifact:\/\/\/?([^/:]+)\/([^/:]+)\/([^/:]+)(?::(latest|v\d+))?$/.exec(url);
  if (!match) {
    throw badRequest(`training_data_url "${url}" is not wandb-artifact:///{entity}/{project}/{name}:v{N} (or :latest) or an https URL`);
  }
  const [, entity, project, name, tag] = match as unknown as [string, string, string, string, string | undefined];
  return { entity, project, name, version: tag && tag !== "latest" ? Number(tag.slice(1)) : null };
}

/** The artifact behind a URL (null for an allowed https URL); 400 when it does not resolve. */
export async function resolveTrainingData(artifacts: Artifacts, callerEntity: string, url: string, httpsHosts: readonly string[]): Promise<ArtifactRecord | null> {
  const ref = parseArtifactUrl(url);
  if ("https" in ref) {
    if (!httpsHosts.includes(ref.https.hostname)) {
      throw badRequest(`training_data_url host ${ref.https.hostname} is not allowed here (operator setting ARTIFACT_HTTPS_HOSTS)`);
    }
    return null;
  }
  // Another entity's artifact is reported as absent, like every other resource.
  const found = ref.entity === callerEntity ? await artifacts.find(ref.entity, ref.project, ref.name, ref.version) : null;
  if (!found) throw badRequest(`training_data_url ${url} does not resolve to an uploaded artifact`);
  return found;
}
