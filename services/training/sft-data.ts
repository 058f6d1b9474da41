// Reads an SFT job's data: `train.jsonl` (lines `{"messages": [...], "tools"?: [...]}`, what ART
// uploads) or the spec's `trajectories.jsonl` (+ `metadata.json`) with ART trajectories whose
// Choices become assistant messages. Every line is checked; errors name the file and line.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { ArtifactRecord, Artifacts } from "../artifacts/index.js";
import { TrainingInputError } from "./trainer/api.js";

export async function readSftRows(artifacts: Artifacts, artifact: ArtifactRecord): Promise<JsonObject[]> {
  const train = await artifacts.read(artifact, "train.jsonl");
  if (train) return parseLines("train.jsonl", train.toString("utf8"), (line) => line);
  const trajectories = await artifacts.read(artifact, "trajectories.jsonl");
  if (trajectories) return parseLines("trajectories.jsonl", trajectories.toString("utf8"), trajectoryToRow);
  throw new TrainingInputError(`artifact ${artifact.name}:v${artifact.version} has neither train.jsonl nor trajectories.jsonl (files: ${artifact.files.map((f) => f.name).join(", ")})`);
}

/** `train.jsonl` text from elsewhere (an allowed https URL). */
export function parseTrainJsonl(text: string): JsonObject[] {
  return parseLines("train.jsonl", text, (line) => line);
}

function parseLines(file: string, text: string, toRow: (line: JsonObject) => JsonObject): JsonObject[] {
  const rows: JsonObject[] = [];
  text.split("\n").forEach((raw, index) => {
    if (raw.trim() === "") return;
    const where = `${file} line ${index + 1}`;
    let parsed: JsonValue;
    try {
      parsed = JSON.parse(raw) as JsonValue;
    } catch (error) {
      throw new TrainingInputError(`${where}: not valid JSON (${error instanceof Error ? error.message : String(error)})`);
    }
    if (!isObject(parsed)) throw new TrainingInputError(`${where}: expected a JSON object`);
    const row = toRow(parsed);
    const messages = row.messages;
    if (!Array.isArray(messages) || messages.length === 0) throw new TrainingInputError(`${where}: "messages" must be a non-empty list`);
    messages.forEach((message, position) => {
      if (!isObject(message) || typeof message.role !== "string") throw new TrainingInputError(`${where}: messages[${position}] needs a "role"`);
    });
    const last = messages[messages.length - 1] as JsonObject;
    if (last.role !== "assistant") throw new TrainingInputError(`${where}: the last message must be the assistant's (it is "${String(last.role)}")`);
    if (row.tools !== undefined && row.tools !== null && !Array.isArray(row.tools)) throw new TrainingInputError(`${where}: "tools" must be a list`);
    rows.push(row);
  });
  if (rows.length === 0) throw new TrainingInputError(`${file} has no rows`);
  return rows;
}

/** An ART trajectory line -> `{messages, tools}`: Choices become assistant messages, null content "". */
function trajectoryToRow(trajectory: JsonObject): JsonObject {
  const items = Array.isArray(trajectory.messages_and_choices) ? trajectory.messages_and_choices : [];
  const messages = items.map((item) => {
    if (!isObject(item)) return item;
    if (isObject(item.message) && item.role === undefined) {
      const message = item.message;
      return { role: "assistant", content: message.content ?? "", ...(Array.isArray(message.tool_calls) && message.tool_calls.length > 0 ? { tool_calls: message.tool_calls } : {}) };
    }
    return { ...item, content: item.content ?? "" };
  });
  return { messages, ...(Array.isArray(trajectory.tools) && trajectory.tools.length > 0 ? { tools: trajectory.tools } : {}) };
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
