// The contract stays consistent: buf lint passes, gen/ is exactly what `buf generate` writes from
// proto/, and the TypeScript typechecks.
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..", "..");
const npx = (...args: string[]) => run("npx", args, { cwd: root, maxBuffer: 16 * 1024 * 1024 });

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name))).sort();
}

describe("contract", () => {
  it("passes buf lint", async () => {
    await expect(npx("buf", "lint")).resolves.toBeDefined();
  });

  it("has gen/ exactly as buf generate writes it", async () => {
    const out = await mkdtemp(join(tmpdir(), "srl-gen-"));
    try {
      await npx("buf", "generate", "--output", out);
      const fresh = join(out, "gen");
      const committed = join(root, "gen");
      const files = await listFiles(fresh);
      expect(await listFiles(committed)).toEqual(files);
      for (const file of files) {
        expect(await readFile(join(committed, file), "utf8"), file).toBe(await readFile(join(fresh, file), "utf8"));
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it("typechecks (services, tests and the console)", async () => {
    for (const project of ["tsconfig.json", "console/tsconfig.json"]) {
      const result = await npx("tsc", "--noEmit", "-p", project).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "failed" }));
      expect(result.stdout, project).toBe("");
    }
  }, 180_000);
});

describe("documentation", () => {
  it("lists every configuration variable in the README", async () => {
    const { configVariables } = await import("../../services/core/config.js");
    const readme = await readFile(join(root, "README.md"), "utf8");
    for (const variable of configVariables) expect(readme, variable.name).toContain(`| \`${variable.name}\` |`);
  });
});
