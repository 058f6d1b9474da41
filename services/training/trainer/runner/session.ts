// One training job's mutable state: the model, the LoRA being trained and its AdamW moments.
// An optimizer step runs forward/backward over one or more micro-batches (their gradients add up:
// each loss is already normalised by the whole batch), clips, and updates the LoRA in place.
import type { numpy as np, JsTree } from "@jax-js/jax";
import type { CausalLm, LossSpec } from "../model/causal-lm.js";
import type { ForwardInputs } from "../model/forward.js";
import type { LoraWeights } from "../model/lora.js";
import { ADAMW_DEFAULTS, AdamW } from "../optim/adamw.js";
import { clipGradNorm } from "../optim/clip.js";

export interface MicroBatch<D> {
  /** Built lazily so only one micro-batch's arrays exist at a time. */
  build(): { inputs: ForwardInputs; data: D };
}

export interface StepOutcome {
  /** Sum of the micro-batch losses (= the batch loss). */
  loss: number;
  /** Sum of each aux value over micro-batches. */
  aux: Record<string, number>;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** False when the gradient was not finite: the LoRA was left unchanged. */
  applied: boolean;
}

export class TrainingSession {
  readonly optimizer: AdamW;

  constructor(
    readonly lm: CausalLm,
    readonly lora: LoraWeights,
    weightDecay: number,
  ) {
    this.optimizer = new AdamW({ ...ADAMW_DEFAULTS, weightDecay });
  }

  async step<D extends JsTree<np.Array>>(loss: LossSpec<D>, microBatches: readonly MicroBatch<D>[], lr: number, maxGradNorm: number): Promise<StepOutcome> {
    const grads = new Map<string, Float32Array>();
    const aux: Record<string, number> = {};
    let total = 0;
    for (const mb of microBatches) {
      const { inputs, data } = mb.build();
      const r = await this.lm.valueAndGrad(loss, this.lora, inputs, data);
      total += r.loss;
      for (const [k, v] of Object.entries(r.aux)) aux[k] = (aux[k] ?? 0) + v;
      for (const [name, g] of r.grads) {
        accumulate(grads, `${name}.a`, g.a);
        accumulate(grads, `${name}.b`, g.b);
      }
    }
    const gradNorm = clipGradNorm(grads, maxGradNorm);
    const applied = Number.isFinite(gradNorm) && Number.isFinite(total);
    if (applied) this.optimizer.step(this.params(), grads, lr);
    return { loss: total, aux, gradNorm, applied };
  }

  /** The LoRA tensors as the optimizer's flat parameter set (views, updated in place). */
  private params(): Map<string, Float32Array> {
    const out = new Map<string, Float32Array>();
    for (const [name, t] of this.lora.tensors) {
      out.set(`${name}.a`, t.a);
      out.set(`${name}.b`, t.b);
    }
    return out;
  }
}

function accumulate(into: Map<string, Float32Array>, key: string, g: Float32Array): void {
  const cur = into.get(key);
  if (!cur) {
    into.set(key, g);
    return;
  }
  for (let i = 0; i < cur.length; i++) cur[i] = cur[i]! + g[i]!;
}
