import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    // Two cores: end-to-end files share one server; more workers only fight over the CPU.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: "suite",
          include: ["services/**/*.test.ts", "test/**/*.test.ts"],
          exclude: ["**/*.quiet.test.ts", "**/node_modules/**"],
          globalSetup: ["test/support/global-setup.ts"],
          sequence: { groupOrder: 0 },
        },
      },
      {
        // Tests that compare timings (only orderings, never numbers) run last, one file at a time,
        // once the rest of the suite has finished: a loaded 2-core machine would decide them.
        extends: true,
        test: {
          name: "quiet",
          include: ["test/**/*.quiet.test.ts"],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
