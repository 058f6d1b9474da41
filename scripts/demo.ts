// `npm run demo`: a few RL steps of a toy task against a running service, through the public API
// only. The task: make the model use the letter "e" more; reward = the share of "e" in a reply.
// Needs SRL_API_KEY (the key `npm start` printed); SRL_URL defaults to http://127.0.0.1:8000.
export {}; // a module, for top-level await

const base = (process.env.SRL_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const key = process.env.SRL_API_KEY;
const steps = Number(process.env.DEMO_STEPS ?? 6);
if (!key) {
  console.error("Set SRL_API_KEY to an API key of the running service (npm start prints one on its first start; npm run keys -- create --entity NAME makes more).");
  process.exit(2);
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as T;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

const prompts = ["Tell me a story.", "Describe the sea.", "What is a tree?", "Say hello."];
const reward = (text: string) => [...text].filter((c) => c === "e").length / Math.max(1, text.length);

const model = await call<{ id: string; entity: string; project: string; name: string; run_id: string }>("POST", "/preview/models", {
  project: "demo",
  name: `e-lover-${Date.now().toString(36)}`,
  base_model: "tiny-chat",
  return_existing: true,
});
const name = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;
console.log(`Registered ${name} (model ${model.id}, run ${model.run_id}). Training ${steps} RL steps...`);

for (let step = 1; step <= steps; step++) {
  const started = Date.now();
  const groups = [];
  let total = 0;
  let count = 0;
  for (const prompt of prompts) {
    const messages = [{ role: "user", content: prompt }];
    const completion = await call<{ choices: { message: { content: string } }[] }>("POST", "/chat/completions", {
      model: name,
      messages,
      n: 4,
      temperature: 1,
      max_tokens: 24,
      logprobs: true,
      return_tokens_as_token_ids: true,
    });
    groups.push({
      trajectories: completion.choices.map((choice) => {
        const r = reward(choice.message.content);
        total += r;
        count++;
        return { messages_and_choices: [...messages, choice], reward: r };
      }),
    });
  }
  const job = await call<{ id: string }>("POST", "/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.001 } });
  let after = "";
  let outcome = "";
  while (!outcome) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const page = await call<{ data: { id: string; type: string; data: { error_message?: string } }[] }>("GET", `/preview/training-jobs/${job.id}/events?limit=100${after ? `&after=${after}` : ""}`);
    for (const event of page.data) {
      after = event.id;
      if (event.type === "training_ended") outcome = "ok";
      if (event.type === "training_failed") outcome = `failed: ${event.data.error_message}`;
    }
  }
  console.log(`step ${step}: mean reward of the samples ${(total / count).toFixed(3)}, training ${outcome} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  if (outcome !== "ok") process.exit(1);
}
console.log(`Done. History: curl -H "Authorization: Bearer $SRL_API_KEY" ${base}/v1/preview/runs/${model.run_id}/metrics`);
console.log(`Checkpoints: curl -H "Authorization: Bearer $SRL_API_KEY" "${base}/v1/preview/models/${model.id}/checkpoints?order=desc"`);
