// Names a chat completion may use for `model`:
//   wandb-artifact:///{entity}/{project}/{name}[:step{N}|:latest|:v{N}]  (two slashes tolerated)
//   {project}/{name}[:step{N}|:latest]                                   (the caller's entity)
//   tinker://{training_run_id}/sampler_weights/{name}                    (Tinker sampler weights)
//   {base model}                                                         (a catalog name)
// `v{N}` is the artifact version of a checkpoint: v0 is the base model (step 0), vN step N.
// A Tinker path names a checkpoint of the caller's registered model whose id is the training run
// id, by the checkpoint's name (`sampler_weights/{name}`, CheckpointRecord.name). Its other kinds,
// `weights/{name}` (training state) and `external_weights/{name}`, parse but are not servable.
export type ModelName =
  | { kind: "registered"; entity: string | null; project: string; name: string; step: number | "latest" }
  | { kind: "tinker"; trainingRunId: string; checkpointType: TinkerCheckpointType; checkpointId: string }
  | { kind: "base"; name: string };

/** Tinker's checkpoint kinds by their path segment (the SDK's ParsedCheckpointTinkerPath). */
export type TinkerCheckpointType = "training" | "sampler" | "external";

/** Each kind's path segment: `tinker://{run}/{segment}/{name}`. */
export const TINKER_SEGMENT_OF_TYPE: Record<TinkerCheckpointType, string> = { training: "weights", sampler: "sampler_weights", external: "external_weights" };
const TINKER_SEGMENTS: Record<string, TinkerCheckpointType> = Object.fromEntries(Object.entries(TINKER_SEGMENT_OF_TYPE).map(([type, segment]) => [segment, type as TinkerCheckpointType]));

/**
 * `tinker://{run}/{weights|sampler_weights|external_weights}/{name}` as the Tinker SDK reads it:
 * exactly three non-empty parts (around surrounding blanks); `checkpointId` is `{segment}/{name}`.
 * Null for anything else.
 */
export function parseTinkerPath(raw: string): Extract<ModelName, { kind: "tinker" }> | null {
  const text = raw.trim();
  if (!text.startsWith("tinker://")) return null;
  const parts = text.slice("tinker://".length).split("/");
  if (parts.length !== 3 || parts.some((part) => part.length === 0)) return null;
  const [run, segment, name] = parts as [string, string, string];
  const checkpointType = Object.hasOwn(TINKER_SEGMENTS, segment) ? TINKER_SEGMENTS[segment] : undefined;
  if (!checkpointType) return null;
  return { kind: "tinker", trainingRunId: run, checkpointType, checkpointId: `${segment}/${name}` };
}

/** `isBaseModel` decides names that are both, such as a hub-style "org/model" base model. */
export function parseModelName(raw: string, isBaseModel: (name: string) => boolean): ModelName {
  const text = raw.trim();
  if (isBaseModel(text)) return { kind: "base", name: text };
  const tinker = parseTinkerPath(text);
  if (tinker) return tinker;
  if (text.startsWith("wandb-artifact://")) {
    const path = text.slice("wandb-artifact://".length).replace(/^\/+/, "");
    const [entity, project, rest, ...extra] = path.split("/");
    if (!entity || !project || !rest || extra.length > 0) return { kind: "base", name: text };
    return { kind: "registered", entity, project, ...nameAndStep(rest) };
  }
  const parts = text.split("/");
  if (parts.length === 2 && parts[0] && parts[1] && !text.includes("://") && !text.startsWith("hf:")) {
    return { kind: "registered", entity: null, project: parts[0], ...nameAndStep(parts[1]) };
  }
  return { kind: "base", name: text };
}

function nameAndStep(text: string): { name: string; step: number | "latest" } {
  const match = /^(.*):(step(\d+)|v(\d+)|latest)$/.exec(text);
  if (!match?.[1]) return { name: text, step: "latest" };
  const step = match[3] ?? match[4];
  return { name: match[1], step: step === undefined ? "latest" : Number(step) };
}
