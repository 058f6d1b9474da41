// AdamW as torch.optim.AdamW / HF apply it (decoupled weight decay, bias-corrected moments), on
// the host: the LoRA state is small (tens of thousands to a few million values), so a plain loop
// in float64 arithmetic over Float32Array storage costs far less than the forward pass.
// Spec §5.2: betas (0.9, 0.99), eps 1e-8; weight decay 0.1 for RL, 0 for SFT. (ART uses
// bitsandbytes' 8-bit paged AdamW; full-precision moments here.)

export interface AdamWOptions {
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}

export const ADAMW_DEFAULTS: Omit<AdamWOptions, "weightDecay"> = { beta1: 0.9, beta2: 0.99, eps: 1e-8 };

/** Named parameter tensors, updated in place. */
export type ParamSet = ReadonlyMap<string, Float32Array>;

export class AdamW {
  private readonly m = new Map<string, Float32Array>();
  private readonly v = new Map<string, Float32Array>();
  private t = 0;

  constructor(readonly options: AdamWOptions) {}

  get stepCount(): number {
    return this.t;
  }

  /** One update of every parameter with its gradient (same names and lengths) at learning rate lr. */
  step(params: ParamSet, grads: ParamSet, lr: number): void {
    const { beta1, beta2, eps, weightDecay } = this.options;
    this.t += 1;
    const bc1 = 1 - beta1 ** this.t;
    const bc2 = 1 - beta2 ** this.t;
    const stepSize = lr / bc1;
    const sqrtBc2 = Math.sqrt(bc2);
    for (const [name, p] of params) {
      const g = grads.get(name);
      if (!g || g.length !== p.length) throw new Error(`AdamW: no gradient of the right size for ${name}`);
      const m = this.moment(this.m, name, p.length);
      const v = this.moment(this.v, name, p.length);
      const decay = 1 - lr * weightDecay;
      for (let i = 0; i < p.length; i++) {
        const gi = g[i]!;
        const mi = beta1 * m[i]! + (1 - beta1) * gi;
        const vi = beta2 * v[i]! + (1 - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        // torch: p *= 1 - lr·wd; p -= lr/bc1 · m / (sqrt(v)/sqrt(bc2) + eps)
        p[i] = p[i]! * decay - (stepSize * mi) / (Math.sqrt(vi) / sqrtBc2 + eps);
      }
    }
  }

  private moment(store: Map<string, Float32Array>, name: string, n: number): Float32Array {
    let a = store.get(name);
    if (!a) store.set(name, (a = new Float32Array(n)));
    return a;
  }
}
