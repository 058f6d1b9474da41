import { describe, expect, it } from "vitest";
import { FairGate } from "./fair-gate.js";

describe("FairGate", () => {
  it("gives waiting entities turns round-robin, each entity's own work in order", async () => {
    const gate = new FairGate(1);
    const order: string[] = [];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const blocker = gate.run("a", () => held);
    const jobs = [
      ...["a1", "a2", "a3", "a4"].map((name) => gate.run("a", async () => void order.push(name))),
      ...["b1", "b2"].map((name) => gate.run("b", async () => void order.push(name))),
      gate.run("c", async () => void order.push("c1")),
    ];
    release();
    await Promise.all([blocker, ...jobs]);
    expect(order).toEqual(["a1", "b1", "c1", "a2", "b2", "a3", "a4"]);
  });

  it("runs as many at once as it has slots, and frees a slot when work fails", async () => {
    const gate = new FairGate(2);
    let active = 0;
    let most = 0;
    const work = async () => {
      active++;
      most = Math.max(most, active);
      await new Promise((resolve) => setTimeout(resolve, 5));
      active--;
    };
    await expect(gate.run("x", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await Promise.all(Array.from({ length: 6 }, (_, i) => gate.run(i % 2 ? "x" : "y", work)));
    expect(most).toBe(2);
  });
});
