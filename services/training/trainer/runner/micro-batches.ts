// Splits an optimizer step's rows into micro-batches of bounded padded size, so activations
// (and the [R, T, vocab] logits above all) stay bounded whatever the batch size, and pads each
// one's length to a bucket so few distinct shapes get compiled.
import { bucketLength } from "../model/inputs.js";

/** Padded tokens (rows × T) per micro-batch; one row always fits, however long. */
export const MICRO_BATCH_TOKENS = 2048;

export interface RowGroup {
  rows: number[];
  seqLen: number;
}

export function groupRows(lengths: readonly number[], budget = MICRO_BATCH_TOKENS): RowGroup[] {
  const groups: RowGroup[] = [];
  let cur: number[] = [];
  let curLen = 0;
  lengths.forEach((len, i) => {
    const seqLen = bucketLength(Math.max(curLen, len));
    if (cur.length > 0 && (cur.length + 1) * seqLen > budget) {
      groups.push({ rows: cur, seqLen: bucketLength(curLen) });
      cur = [];
      curLen = 0;
    }
    cur.push(i);
    curLen = Math.max(curLen, len);
  });
  if (cur.length > 0) groups.push({ rows: cur, seqLen: bucketLength(curLen) });
  return groups;
}
