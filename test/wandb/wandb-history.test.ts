// Reading a run's history back through the W&B API, as each wandb SDK version does: rows streamed
// by `run.log` come back exactly as logged from `history` (run.history(); 0.25's scan_history),
// `sampledHistory` (keys), `historyKeys` (scan_history's last step), and `parquetHistory`
// (0.28+'s scan_history): live while the run runs, real parquet files through signed URLs once it
// finished, files that never change once handed out (a resumed run adds a file).
import { parquetReadObjects } from "hyparquet"; // hyparquet-writer's own reader (its one dependency)
import { beforeAll, describe, expect, it } from "vitest";
import { baseUrl } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";
import { data, graphql, streamHistory, UPSERT_RUN } from "./wandb-client.js";

const ROWS = [
  '{"_runtime":0.02,"_step":0,"loss":0.5,"acc":1,"note":"first","_timestamp":1795798386.47}',
  '{"loss":0.25,"acc":2,"note":"second","lr":0.0001,"_timestamp":1795798386.48,"_runtime":0.03,"_step":1}',
  '{"_timestamp":1795798386.49,"_runtime":0.04,"_step":2,"loss":NaN,"acc":3,"note":"third","nested":{"a":1.5}}',
];
const MORE = ['{"_step":3,"_runtime":5.5,"_timestamp":1795798400.0,"loss":0.0625,"acc":4,"note":"fourth"}'];

const HISTORY = `query ($project: String!, $entity: String!, $name: String!, $samples: Int, $minStep: Int64, $maxStep: Int64) {
  project(name: $project, entityName: $entity) { run(name: $name) { history(samples: $samples, minStep: $minStep, maxStep: $maxStep) historyKeys } } }`;
const SAMPLED = `query ($project: String!, $entity: String!, $name: String!, $specs: [JSONString!]!) {
  project(name: $project, entityName: $entity) { run(name: $name) { sampledHistory(specs: $specs) } } }`;
const PARQUET = `query ($project: String!, $entity: String!, $name: String!) {
  project(name: $project, entityName: $entity) { run(name: $name) { parquetHistory(liveKeys: ["_step"]) { parquetUrls liveData } } } }`;

type RunField<T> = { project: { run: T } };

async function parquetRows(url: string): Promise<Record<string, unknown>[]> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return parquetReadObjects({ file: await res.arrayBuffer() });
}

describe("W&B run history read back", () => {
  let key: string;
  let entity: string;
  const project = "hist";
  const run = "hist-run-1";
  const vars = () => ({ entity, project, name: run });

  beforeAll(async () => {
    entity = uniqueEntity("wb-hist");
    key = await createKey(entity);
    await data(key, UPSERT_RUN, { entity, project, name: run });
    expect(await streamHistory(key, { entity, project, run }, 0, ROWS)).toBe(200);
  });

  it("answers history pages and samples with the rows exactly as logged", async () => {
    const all = (await data(key, HISTORY, vars())) as RunField<{ history: string[]; historyKeys: { lastStep: number; keys: Record<string, unknown> } }>;
    expect(all.project.run.history).toEqual(ROWS);
    expect(all.project.run.historyKeys.lastStep).toBe(2);
    expect(all.project.run.historyKeys.keys).toMatchObject({ loss: { typeCounts: [{ type: "number", count: 3 }] }, note: { typeCounts: [{ type: "string", count: 3 }] }, "nested.a": { typeCounts: [{ type: "number", count: 1 }] } });
    // Pages of steps [minStep, maxStep), as wandb 0.25's scan_history and wandb-core's live pages ask.
    const page = (await data(key, HISTORY, { ...vars(), minStep: 1, maxStep: 2, samples: 1000 })) as RunField<{ history: string[] }>;
    expect(page.project.run.history).toEqual([ROWS[1]]);
    // Fewer samples than rows: spread evenly, first and last kept.
    const sampled = (await data(key, HISTORY, { ...vars(), samples: 2 })) as RunField<{ history: string[] }>;
    expect(sampled.project.run.history).toEqual([ROWS[0], ROWS[2]]);
  });

  it("answers sampledHistory with the rows holding every key, just those keys, maxStep included", async () => {
    const specs = [JSON.stringify({ keys: ["_step", "lr"], samples: 10 }), JSON.stringify({ keys: ["_step", "note"], minStep: 1, maxStep: 2, samples: 10 })];
    const answer = (await data(key, SAMPLED, { ...vars(), specs })) as RunField<{ sampledHistory: unknown[][] }>;
    expect(answer.project.run.sampledHistory).toEqual([
      [{ _step: 1, lr: 0.0001 }],
      [
        { _step: 1, note: "second" },
        { _step: 2, note: "third" },
      ],
    ]);
  });

  it("serves a running run's rows live, then real parquet files once it finished; a resumed run adds a file", async () => {
    const live = (await data(key, PARQUET, vars())) as RunField<{ parquetHistory: { parquetUrls: string[]; liveData: unknown[] } }>;
    expect(live.project.run.parquetHistory).toEqual({ parquetUrls: [], liveData: [{ _step: 0 }, { _step: 1 }, { _step: 2 }] });

    expect(await streamHistory(key, { entity, project, run }, 3, [], 0)).toBe(200); // run.finish()
    const done = (await data(key, PARQUET, vars())) as RunField<{ parquetHistory: { parquetUrls: string[]; liveData: unknown[] } }>;
    const [first] = done.project.run.parquetHistory.parquetUrls;
    expect(done.project.run.parquetHistory).toMatchObject({ parquetUrls: [expect.stringContaining(`${baseUrl()}/wandb/files/`)], liveData: [] });
    const rows = await parquetRows(first as string);
    expect(rows.map((row) => row._step)).toEqual([0n, 1n, 2n]);
    expect(rows[1]).toMatchObject({ loss: 0.25, acc: 2n, note: "second", lr: 0.0001, _runtime: 0.03, _timestamp: 1795798386.48, nested: undefined });
    expect(rows[2]).toMatchObject({ loss: NaN, note: "third", lr: null, nested: { a: 1.5 } });
    // HEAD answers the size (wandb-core asks it before reading the file over HTTP).
    const head = await fetch(first as string, { method: "HEAD" });
    expect(Number(head.headers.get("content-length"))).toBe((await (await fetch(first as string)).arrayBuffer()).byteLength);

    // wandb.init(resume=...) logs on: live again until it finishes, then a second file.
    await data(key, UPSERT_RUN, { entity, project, name: run });
    expect(await streamHistory(key, { entity, project, run }, 3, MORE)).toBe(200);
    const resumed = (await data(key, PARQUET, vars())) as RunField<{ parquetHistory: { parquetUrls: string[]; liveData: unknown[] } }>;
    expect(resumed.project.run.parquetHistory.parquetUrls).toEqual([]);
    expect(resumed.project.run.parquetHistory.liveData).toHaveLength(4);
    expect(await streamHistory(key, { entity, project, run }, 4, [], 0)).toBe(200);
    const again = (await data(key, PARQUET, vars())) as RunField<{ parquetHistory: { parquetUrls: string[] } }>;
    expect(again.project.run.parquetHistory.parquetUrls).toHaveLength(2);
    // The first file holds what it held (wandb-core caches it by position), the second the new row.
    expect((await parquetRows(again.project.run.parquetHistory.parquetUrls[0] as string)).map((row) => row.note)).toEqual(["first", "second", "third"]);
    expect(await parquetRows(again.project.run.parquetHistory.parquetUrls[1] as string)).toEqual([{ _step: 3n, _runtime: 5.5, _timestamp: 1795798400, loss: 0.0625, acc: 4n, note: "fourth" }]);
  });

  it("refuses a tampered history URL and keeps the run from other entities", async () => {
    const done = (await data(key, PARQUET, vars())) as RunField<{ parquetHistory: { parquetUrls: string[] } }>;
    const url = done.project.run.parquetHistory.parquetUrls[0] as string;
    const [site, rest] = url.split("/wandb/files/") as [string, string];
    const [token, file] = rest.split("/") as [string, string];
    const tampered = `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`;
    expect((await fetch(`${site}/wandb/files/${tampered}/${file}`)).status).toBe(404);
    const stranger = await createKey(uniqueEntity("wb-hist-other"));
    const theirs = await graphql(stranger, PARQUET, vars());
    expect(theirs.body.data?.project).toBeNull();
  });
});
