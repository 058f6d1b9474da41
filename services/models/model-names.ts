// Names a chat completion may use for `model`:
//   wandb-artifact:///{entity}/{project}/{name}[:step{N}|:latest|:v{N}]  (two slashes tolerated)
//   {project}/{name}[:step{N}|:latest]                                   (the caller's entity)
//   {base model}                                                         (a catalog name)
// `v{N}` is the artifact version of a checkpoint: v0 is the base model (step 0), vN step N.
export type ModelName =
  | { kind: "registered"; entity: string | null; project: string; name: string; step: number | "latest" }
  | { kind: "base"; name: string };

/** `isBaseModel` decides names that are both, such as a hub-style "org/model" base model. */
export function parseModelName(raw: string, isBaseModel: (name: string) => boolean): ModelName {
  const text = raw.trim();
  if (isBaseModel(text)) return { kind: "base", name: text };
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
