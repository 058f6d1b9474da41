import { describe, expect, it } from "vitest";
import { chooseSequences, runsAdded, SPLIT_COST_TOKENS, type SequenceCandidate } from "./sequence-choice.js";

const candidate = (id: number, shared = 0, held = 0): SequenceCandidate => ({ id, shared, held });
const ids = (chosen: SequenceCandidate[]) => chosen.map((c) => c.id);

describe("runsAdded", () => {
  it("counts the runs of consecutive ids a sequence adds, extends or joins", () => {
    expect(runsAdded(new Set(), 3)).toBe(1);
    expect(runsAdded(new Set([0, 1]), 5)).toBe(1);
    expect(runsAdded(new Set([0, 1]), 2)).toBe(0);
    expect(runsAdded(new Set([4, 5]), 3)).toBe(0);
    expect(runsAdded(new Set([0, 1, 3]), 2)).toBe(-1);
  });
});

describe("chooseSequences", () => {
  it("on an idle context, takes the longest cached prefix, then the emptiest, then the lowest id", () => {
    expect(ids(chooseSequences([candidate(0, 3, 50), candidate(5, 40, 90), candidate(2, 12, 10)], new Set(), 1))).toEqual([5]);
    expect(ids(chooseSequences([candidate(3, 30, 90), candidate(1, 30, 40), candidate(2, 30, 40)], new Set(), 1))).toEqual([1]);
  });

  it("keeps the busy sequences one run when the prefixes differ by less than a split costs", () => {
    const free = [candidate(0, 30), candidate(1, 30), candidate(5, 34), candidate(6, 30), candidate(7, 36)];
    // Busy 2, 3, 4: the prompt shares 34 tokens with sequence 5 and 36 with 7; 5 extends the run.
    expect(ids(chooseSequences(free, new Set([2, 3, 4]), 1))).toEqual([5]);
    // Busy 0, 1, 3: 2 joins the two runs into one, whatever the others hold.
    expect(ids(chooseSequences([candidate(2, 0), candidate(4, 200), candidate(6, 250)], new Set([0, 1, 3]), 1))).toEqual([2]);
  });

  it("takes a far longer cached prefix even when it splits the busy sequences", () => {
    const conversation = candidate(6, 30 + SPLIT_COST_TOKENS + 1);
    expect(ids(chooseSequences([candidate(2, 30), conversation], new Set([0, 1]), 1))).toEqual([6]);
    expect(ids(chooseSequences([candidate(2, 30), candidate(6, 30 + SPLIT_COST_TOKENS - 1)], new Set([0, 1]), 1))).toEqual([2]);
  });

  it("takes the n choices of one request next to each other", () => {
    const free = [0, 1, 2, 3, 4, 5, 6, 7].map((id) => candidate(id, id === 5 ? 10 : 0));
    expect(ids(chooseSequences(free, new Set(), 3))).toEqual([5, 4, 3]);
    expect(ids(chooseSequences(free.filter((c) => c.id !== 4), new Set([3]), 2))).toEqual([2, 1]);
  });

  it("takes what is free when fewer than n are", () => {
    expect(ids(chooseSequences([candidate(1)], new Set([0]), 2))).toEqual([1]);
  });
});
