// The trainer's model: frozen base weights plus jitted functions over LoRA parameters. This is
// the only place that compiles jax-js functions; losses plug in as traceable functions of the
// forward outputs, so SFT and RL share one forward/backward path.
import { jit, numpy as np, tree, valueAndGrad, type JsTree } from "@jax-js/jax";
import { forward, type ForwardInputs, type ForwardOutputs } from "./forward.js";
import { forwardInputs } from "./inputs.js";
import { loraArrays, loraScale, type LoraWeights } from "./lora.js";
import { ensureJaxReady } from "./runtime.js";
import { loadBaseModel, type BaseArrays, type BaseModel } from "./weights.js";

/** A loss over the forward outputs and per-batch data; returns the scalar and named scalar aux values. */
export type LossFn<D extends JsTree<np.Array>> = (out: ForwardOutputs, data: D) => [np.Array, Record<string, np.Array>];

export interface LossSpec<D extends JsTree<np.Array>> {
  fn: LossFn<D>;
  /** Whether the forward pass must also compute per-position entropies. */
  entropy: boolean;
}

export interface StepResult {
  loss: number;
  aux: Record<string, number>;
  /** Gradients in the host layout of LoraWeights (a: [n_in, rank], b: [rank, n_out]). */
  grads: Map<string, { a: Float32Array; b: Float32Array }>;
}

export class CausalLm {
  private constructor(readonly base: BaseModel) {}

  static async load(path: string): Promise<CausalLm> {
    await ensureJaxReady();
    return new CausalLm(await loadBaseModel(path));
  }

  get config(): BaseModel["config"] {
    return this.base.config;
  }

  inputs(rows: readonly (readonly number[])[], seqLen: number): ForwardInputs {
    return forwardInputs(this.base, rows, seqLen);
  }

  /**
   * Log-probabilities of each row's tokens under base + LoRA: out[r][t] = log p(row[t+1] | row[..t])
   * for t < len-1 (no gradient). lora null: the base model alone.
   */
  async logprobs(lora: LoraWeights | null, rows: readonly (readonly number[])[], seqLen?: number): Promise<Float32Array[]> {
    const T = seqLen ?? Math.max(...rows.map((r) => r.length));
    const fn = this.evalFn(lora ? loraScale(lora.spec) : 0);
    const out = fn(lora ? loraArrays(lora) : {}, tree.ref(this.base.arrays), this.inputs(rows, T));
    const flat = (await out.data()) as Float32Array;
    return rows.map((row, r) => flat.slice(r * T, r * T + Math.max(0, row.length - 1)));
  }

  /**
   * One forward + backward: the loss, its aux values and d loss / d LoRA. The compiled function
   * is cached per loss spec (and recompiled by jax-js per distinct input shapes).
   */
  async valueAndGrad<D extends JsTree<np.Array>>(spec: LossSpec<D>, lora: LoraWeights, inputs: ForwardInputs, data: D): Promise<StepResult> {
    const fn = this.gradFn(spec, loraScale(lora.spec));
    const [[loss, aux], grads] = fn(loraArrays(lora), tree.ref(this.base.arrays), inputs, data);
    const hostGrads = new Map<string, { a: Float32Array; b: Float32Array }>();
    for (const [name, g] of Object.entries(grads)) {
      hostGrads.set(name, { a: (await g.a.data()) as Float32Array, b: (await g.b.data()) as Float32Array });
    }
    const auxOut: Record<string, number> = {};
    for (const [k, v] of Object.entries(aux)) auxOut[k] = ((await v.data()) as Float32Array)[0]!;
    return { loss: ((await loss.data()) as Float32Array)[0]!, aux: auxOut, grads: hostGrads };
  }

  private readonly evalFns = new Map<number, (lora: LoraArrays, base: BaseArrays, inputs: ForwardInputs) => np.Array>();

  private evalFn(scale: number): (lora: LoraArrays, base: BaseArrays, inputs: ForwardInputs) => np.Array {
    let fn = this.evalFns.get(scale);
    if (!fn) {
      const config = this.config;
      fn = jit((lora: LoraArrays, base: BaseArrays, inputs: ForwardInputs) => forward(lora, base, inputs, { config, loraScale: scale, entropy: false }).logprobs);
      this.evalFns.set(scale, fn);
    }
    return fn;
  }

  private readonly gradFns = new Map<LossSpec<never>, Map<number, GradFn>>();

  private gradFn<D extends JsTree<np.Array>>(spec: LossSpec<D>, scale: number): GradFn<D> {
    const key = spec as unknown as LossSpec<never>;
    let byScale = this.gradFns.get(key);
    if (!byScale) this.gradFns.set(key, (byScale = new Map()));
    let fn = byScale.get(scale);
    if (!fn) {
      const config = this.config;
      const objective = (lora: LoraArrays, base: BaseArrays, inputs: ForwardInputs, data: D): [np.Array, Record<string, np.Array>] =>
        spec.fn(forward(lora, base, inputs, { config, loraScale: scale, entropy: spec.entropy }), data);
      fn = jit(valueAndGrad(objective, { argnums: 0, hasAux: true })) as unknown as GradFn;
      byScale.set(scale, fn);
    }
    return fn as unknown as GradFn<D>;
  }
}

type LoraArrays = ReturnType<typeof loraArrays>;
type GradFn<D = unknown> = (lora: LoraArrays, base: BaseArrays, inputs: ForwardInputs, data: D) => [[np.Array, Record<string, np.Array>], LoraArrays];
