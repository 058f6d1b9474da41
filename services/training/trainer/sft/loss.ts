// Spec §7.3: causal-LM cross-entropy summed over the batch's label tokens and divided by their
// count in the whole batch (HF's num_items_in_batch), i.e. the token-mean CE of the batch.
import { numpy as np } from "@jax-js/jax";
import type { LossSpec } from "../model/causal-lm.js";

export type SftData = {
  /** [R, T] 1 where position t's target (token t+1) is a label token, else 0. */
  mask: np.Array;
  /** [] 1 / (number of label tokens in the batch). */
  invCount: np.Array;
};

export const SFT_LOSS: LossSpec<SftData> = {
  entropy: false,
  fn: (out, data) => {
    out.entropy?.dispose();
    const loss = np.sum(out.logprobs.mul(data.mask)).mul(data.invCount).neg();
    return [loss, {}];
  },
};
