// The pieces of reading W&B history back, as units: history lines with non-finite numbers, the
// keys a run logged, evenly spread samples, which rows become which parquet files, byte ranges.
import { describe, expect, it } from "vitest";
import { parseByteRange, sliceChunks } from "../../services/wandb/byte-range.js";
import { parseHistoryRow, stepOf } from "../../services/wandb/history-json.js";
import { countHistoryKeys, historyKeysAnswer } from "../../services/wandb/history-keys.js";
import { evenlySpaced, MAX_HISTORY_SAMPLES, samplesOf } from "../../services/wandb/history-sampling.js";
import { historySegments } from "../../services/wandb/history-segments.js";

describe("history lines", () => {
  it("reads NaN and infinities as numbers, leaves them alone inside strings, refuses non-objects", () => {
    expect(parseHistoryRow('{"_step":3,"loss":NaN,"a":Infinity,"b":-Infinity,"note":"NaN Infinity"}')).toEqual({ _step: 3, loss: NaN, a: Infinity, b: -Infinity, note: "NaN Infinity" });
    expect(parseHistoryRow('{"s":"say \\"NaN\\"","x":1}')).toEqual({ s: 'say "NaN"', x: 1 });
    expect(parseHistoryRow("[1,2]")).toBeNull();
    expect(parseHistoryRow("{not json")).toBeNull();
    expect(stepOf(parseHistoryRow('{"_step":4.0}'))).toBe(4);
    expect(stepOf(parseHistoryRow('{"loss":1}'))).toBeNull();
  });
});

describe("history keys", () => {
  it("counts each key's value types, nested objects as a.b, media by their _type, within a bound", () => {
    const counts = countHistoryKeys({}, [{ _step: 0, loss: 0.5, note: "x", dict: { val1: 1 } }, { _step: 1, loss: "n/a", img: { _type: "image-file", path: "p" } }], 10);
    expect(counts).toEqual({ _step: { number: 2 }, loss: { number: 1, string: 1 }, note: { string: 1 }, "dict.val1": { number: 1 }, img: { "image-file": 1 } });
    expect(Object.keys(countHistoryKeys(counts, [{ new1: 1, new2: 2, loss: 1 }], 6))).toEqual(["_step", "loss", "note", "dict.val1", "img", "new1"]);
    expect(historyKeysAnswer({ loss: { number: 2 } }, 7)).toEqual({ keys: { loss: { typeCounts: [{ type: "number", count: 2 }] } }, lastStep: 7 });
  });
});

describe("history samples", () => {
  it("keeps every row up to `samples`, else spreads them evenly with the first and the last", () => {
    expect(evenlySpaced(3, 5)).toEqual([0, 1, 2]);
    expect(evenlySpaced(10, 4)).toEqual([0, 3, 6, 9]);
    expect(evenlySpaced(1000, 2)).toEqual([0, 999]);
    expect(evenlySpaced(7, 1)).toEqual([0]);
    expect(new Set(evenlySpaced(10_001, 10_000)).size).toBe(10_000);
    expect([samplesOf(undefined), samplesOf(0), samplesOf(20.7), samplesOf(10 ** 9)]).toEqual([500, 1, 20, MAX_HISTORY_SAMPLES]);
  });
});

describe("history files", () => {
  it("serves the rows up to each finish as files cut at fixed places, and everything live past the last finish", () => {
    expect(historySegments([], 0)).toEqual([]);
    expect(historySegments([], 5)).toBeNull();
    expect(historySegments([3], 3)).toEqual([{ from: 0, to: 3 }]);
    expect(historySegments([3], 4)).toBeNull();
    expect(historySegments([3, 4], 4)).toEqual([
      { from: 0, to: 3 },
      { from: 3, to: 4 },
    ]);
    // At most `rowsPerFile` rows a file; a later finish never moves an earlier cut.
    expect(historySegments([25], 25, 10)).toEqual([
      { from: 0, to: 10 },
      { from: 10, to: 20 },
      { from: 20, to: 25 },
    ]);
    expect(historySegments([25, 31], 31, 10)?.slice(0, 3)).toEqual(historySegments([25], 25, 10));
  });
});

describe("byte ranges", () => {
  it("parses one satisfiable range (suffixes and open ends included), else none", () => {
    expect(parseByteRange("bytes=0-99", 1000)).toEqual({ start: 0, end: 99 });
    expect(parseByteRange("bytes=900-", 1000)).toEqual({ start: 900, end: 999 });
    expect(parseByteRange("bytes=-8", 1000)).toEqual({ start: 992, end: 999 });
    expect(parseByteRange("bytes=990-5000", 1000)).toEqual({ start: 990, end: 999 });
    for (const header of [null, "", "bytes=1000-", "bytes=5-2", "bytes=0-1,5-6", "items=0-1", "bytes=-0", "bytes=-"]) expect(parseByteRange(header, 1000)).toBeNull();
  });

  it("slices a stream of chunks, reading no further than the range", async () => {
    let read = 0;
    async function* chunks() {
      for (const text of ["abc", "defg", "hij", "klm"]) {
        read++;
        yield Buffer.from(text);
      }
    }
    const parts: Buffer[] = [];
    for await (const part of sliceChunks(chunks(), { start: 2, end: 8 })) parts.push(part);
    expect(Buffer.concat(parts).toString()).toBe("cdefghi");
    expect(read).toBe(3);
  });
});
