// The install (scripts/install.sh) builds node-llama-cpp's binary with OpenMP, checks it on real
// quantized models and links it; the engine must load that one and not the prebuilt fallback.
import { describe, expect, it } from "vitest";
import { describeBinary, loadLlama } from "./binary.js";
import { readBinariesReport } from "../llama-binaries.js";

describe("llama.cpp binary", () => {
  it("is the local OpenMP build the install checked and linked", async () => {
    const llama = await loadLlama();
    const report = readBinariesReport().addon;
    expect(report?.adopted, `no local build passed its check: ${JSON.stringify(report?.checks.map((check) => check.reason))}`).toMatch(/^(native|noamx)$/);
    expect(describeBinary(llama), "the checked build is not linked; run bash scripts/install.sh").toMatchObject({ build: "localBuild", openmp: true });
    expect(llama.cpuMathCores).toBeGreaterThan(0);
  });
});
