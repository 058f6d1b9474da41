// Metrics of one `log` call, as ART's model.log computes them (training-semantics §6.3):
// reward = mean over trajectories; exception_rate = exceptions / (trajectories + exceptions);
// reward_std_dev = mean over groups of >= 2 trajectories of the population std of rewards;
// each trajectory metric = mean over the trajectories that have it; group_<k> = mean of group
// metric k over non-empty groups. Names get the split prefix unless they start with a section
// or a split.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

const SECTIONS = new Set(["reward", "loss", "offpolicy", "pipeline", "throughput", "costs", "time", "data"]);
const SPLITS = new Set(["train", "val", "test"]);

export function splitMetrics(split: string, groups: JsonObject[]): Record<string, number> {
  const rewards: number[] = [];
  const stdDevs: number[] = [];
  const trajectoryMetrics = new Map<string, number[]>();
  const groupMetrics = new Map<string, number[]>();
  let exceptions = 0;

  for (const group of groups) {
    const trajectories = arrayOf(group.trajectories);
    exceptions += arrayOf(group.exceptions).length;
    const groupRewards = trajectories.map((t) => numeric(objectOf(t).reward) ?? 0);
    rewards.push(...groupRewards);
    if (groupRewards.length >= 2) stdDevs.push(populationStd(groupRewards));
    for (const trajectory of trajectories) collect(trajectoryMetrics, objectOf(objectOf(trajectory).metrics));
    if (trajectories.length > 0) collect(groupMetrics, objectOf(group.metrics), "group_");
  }

  const out: Record<string, number> = {};
  const put = (name: string, values: number[]) => {
    if (values.length > 0) out[prefixed(split, name)] = mean(values);
  };
  put("reward", rewards);
  if (rewards.length + exceptions > 0) out[prefixed(split, "exception_rate")] = exceptions / (rewards.length + exceptions);
  put("reward_std_dev", stdDevs);
  for (const [name, values] of trajectoryMetrics) put(name, values);
  for (const [name, values] of groupMetrics) put(name, values);
  return out;
}

export function prefixed(split: string, name: string): string {
  const head = name.split("/")[0] ?? name;
  return name.includes("/") && (SECTIONS.has(head) || SPLITS.has(head)) ? name : `${split}/${name}`;
}

function collect(into: Map<string, number[]>, metrics: JsonObject, prefix = ""): void {
  for (const [name, value] of Object.entries(metrics)) {
    const number = numeric(value);
    if (number === undefined) continue;
    const key = prefix + name;
    into.set(key, [...(into.get(key) ?? []), number]);
  }
}

function numeric(value: JsonValue | undefined): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "boolean") return value ? 1 : 0;
  return undefined;
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function populationStd(values: number[]): number {
  const mu = mean(values);
  return Math.sqrt(mean(values.map((v) => (v - mu) ** 2)));
}

function arrayOf(value: JsonValue | undefined): JsonValue[] {
  return Array.isArray(value) ? value : [];
}

function objectOf(value: JsonValue | undefined): JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
}
