// The install (scripts/build-llama-addon.sh, run by scripts/install.sh) builds node-llama-cpp's
// binary with OpenMP; the engine must load that one and not the prebuilt fallback.
import { describe, expect, it } from "vitest";
import { describeBinary, loadLlama } from "./binary.js";

describe("llama.cpp binary", () => {
  it("is the local OpenMP build the install made", async () => {
    const llama = await loadLlama();
    expect(describeBinary(llama), "scripts/build-llama-addon.sh did not build or link node-llama-cpp's binary; run it to see why").toEqual({ build: "localBuild", openmp: true });
    expect(llama.cpuMathCores).toBeGreaterThan(0);
  });
});
