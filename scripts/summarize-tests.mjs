// Reads vitest's JSON report and prints the one line CI reads; exits non-zero when anything failed
// or nothing ran. Files that failed to load count as failures.
import { readFileSync } from "node:fs";

const file = process.argv[2] ?? "test-results/vitest.json";
let report;
try {
  report = JSON.parse(readFileSync(file, "utf8"));
} catch (error) {
  console.log(`no vitest report at ${file}: ${error.message}`);
  console.log("tests: 0 passed, 1 failed");
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
const failedSuites = (report.testResults ?? []).filter((r) => r.status === "failed" && (r.assertionResults ?? []).length === 0).length;
const failed = (report.numFailedTests ?? 0) + failedSuites;
console.log(`tests: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
