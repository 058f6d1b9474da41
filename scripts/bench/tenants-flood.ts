// A's flood for `npm run bench:tenants` (scripts/bench/tenants.ts starts it under `nice -n 19`):
// 80 concurrent long streams, 30 MiB prompts, 40 training jobs, 400-alias GraphQL queries and
// cheap calls, for FLOOD_SECONDS against FLOOD_URL with FLOOD_KEY. Prints one JSON line: how many
// answers of each kind and status it got.
import { sleep, tenantCalls } from "./tenant-calls.js";

const url = process.env.FLOOD_URL as string;
const keyA = process.env.FLOOD_KEY as string;
const FLOOD = (process.env.FLOOD_PARTS ?? "streams,prompts,jobs,graphql,calls").split(",");
const calls = tenantCalls(url, keyA);
const json = async (method: string, path: string) => (await calls.json(method, path)).status;
const createJob = async (modelId: string) => (await calls.createJob(modelId)).status;

/** A's flood, until `until`: every answer's status counted. */
async function flood(until: number, modelIds: string[]): Promise<Map<string, number>> {
  const answers = new Map<string, number>();
  const count = (what: string, status: number) => answers.set(`${what} ${status}`, (answers.get(`${what} ${status}`) ?? 0) + 1);
  const loop = async (what: string, call: () => Promise<number>) => {
    while (Date.now() < until) {
      const status = await call().catch(() => 0);
      count(what, status);
      // An attacker honours no Retry-After; the pause only keeps this client from spinning.
      if (status === 429 || status === 0) await sleep(20);
    }
  };
  const stream = async () => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${keyA}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "Tell a story" }], max_tokens: 256, ignore_eos: true, stream: true }),
    });
    await response.arrayBuffer();
    return response.status;
  };
  const hugePrompt = JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "x".repeat(30 * 2 ** 20) }], max_tokens: 1 });
  const longPrompt = async () => {
    const response = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${keyA}`, "content-type": "application/json" }, body: hugePrompt });
    await response.arrayBuffer();
    return response.status;
  };
  const aliases = Array.from({ length: 400 }, (_, i) => `a${i}: viewer { id username entity projects { edges { node { name runs { edges { node { name } } } } } } }`).join(" ");
  const graphql = async () => {
    const response = await fetch(`${url}/graphql`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`api:${keyA}`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({ query: `query Heavy { ${aliases} }` }),
    });
    await response.arrayBuffer();
    return response.status;
  };
  const jobs = async () => {
    for (let i = 0; i < 40; i++) count("job", await createJob(modelIds[i % modelIds.length]!));
  };
  const on = (part: string) => FLOOD.includes(part);
  await Promise.all([
    on("jobs") ? jobs() : undefined,
    ...Array.from({ length: on("streams") ? 80 : 0 }, () => loop("stream", stream)),
    ...Array.from({ length: on("prompts") ? 2 : 0 }, () => loop("30 MiB prompt", longPrompt)),
    ...Array.from({ length: on("graphql") ? 4 : 0 }, () => loop("400-alias graphql", graphql)),
    ...Array.from({ length: on("calls") ? 8 : 0 }, () => loop("list", () => json("GET", "/v1/preview/models"))),
  ]);
  return answers;
}


const answers = await flood(Date.now() + Number(process.env.FLOOD_SECONDS) * 1000, (process.env.FLOOD_MODELS ?? "").split(","));
console.log(JSON.stringify(Object.fromEntries(answers)));
