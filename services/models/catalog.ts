// The base-model catalog: what this deployment can serve and train. The same list answers
// GET /v1/preview/base-models and decides which base_model a new model may use.
export const BUILT_IN_BASE_MODELS = ["tiny-chat"] as const;

export class BaseModelCatalog {
  constructor(private readonly configured: readonly string[]) {}

  names(): string[] {
    return [...new Set([...BUILT_IN_BASE_MODELS, ...this.configured])];
  }

  has(name: string): boolean {
    return this.names().includes(name);
  }
}
