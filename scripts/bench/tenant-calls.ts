// The REST calls both entities of `npm run bench:tenants` make (tenants.ts for B, tenants-flood.ts
// for A): JSON over fetch with a key, and an RL job of one small trajectory group.

export interface TenantCalls {
  json(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> | null }>;
  createJob(modelId: string): Promise<{ status: number; body: Record<string, unknown> | null }>;
}

const groups = [
  {
    trajectories: [0, 1].map((reward) => ({
      messages_and_choices: [{ role: "user", content: "Colour?" }, { finish_reason: "stop", index: 0, message: { role: "assistant", content: reward ? "Blue." : "Red." } }],
      reward,
    })),
  },
];

export function tenantCalls(url: string, key: string): TenantCalls {
  const json: TenantCalls["json"] = async (method, path, body) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json().catch(() => null)) as Record<string, unknown> | null };
  };
  return {
    json,
    createJob: (modelId) => json("POST", "/v1/preview/training-jobs", { model_id: modelId, trajectory_groups: groups, experimental_config: { learning_rate: 1e-4 } }),
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
