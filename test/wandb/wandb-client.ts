// The W&B API as the wandb SDK calls it, for the end-to-end tests of test/wandb: GraphQL with HTTP
// basic `api:<key>`, and the run file stream that `run.log` and `run.finish` write through.
import { baseUrl } from "../support/clients.js";

export const basic = (key: string) => `Basic ${Buffer.from(`api:${key}`).toString("base64")}`;

export interface GraphqlReply {
  status: number;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] };
}

export async function graphql(key: string, query: string, variables: Record<string, unknown> = {}, operationName?: string): Promise<GraphqlReply> {
  const res = await fetch(`${baseUrl()}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(key) },
    body: JSON.stringify({ query, variables, ...(operationName !== undefined ? { operationName } : {}) }),
  });
  return { status: res.status, body: (await res.json()) as GraphqlReply["body"] };
}

/** `data` of a successful answer (the test fails with the errors otherwise). */
export async function data(key: string, query: string, variables: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const reply = await graphql(key, query, variables);
  if (reply.status !== 200 || reply.body.errors || !reply.body.data) throw new Error(`GraphQL ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply.body.data;
}

export const UPSERT_RUN = `mutation ($name: String, $project: String, $entity: String) {
  upsertBucket(input: {name: $name, modelName: $project, entityName: $entity}) { bucket { id name } inserted } }`;

/** One file-stream request: history lines from `offset` on; `exitCode` ends the run (`run.finish`). */
export async function streamHistory(key: string, path: { entity: string; project: string; run: string }, offset: number, lines: readonly string[], exitCode?: number): Promise<number> {
  const body = { files: { "wandb-history.jsonl": { offset, content: lines } }, ...(exitCode !== undefined ? { complete: true, exitcode: exitCode } : {}) };
  const res = await fetch(`${baseUrl()}/files/${path.entity}/${path.project}/${path.run}/file_stream`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(key) },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}
