// Reads the test reports and prints the one line CI reads, over all of them:
//   tests: N passed, M failed
// and exits non-zero when anything failed or nothing ran.
//   node scripts/summarize-tests.mjs test-results/vitest.json test-results/pytest.xml test-results/pytest-art-0.5.18.xml ...
// Every report given counts (any number of them). A *.json argument is vitest's JSON report (files
// that failed to load count as failures); a *.xml argument is a JUnit XML report (pytest
// --junitxml): failures + errors failed, skipped tests count as neither. A report that is missing
// or unreadable counts as 1 failure.
import { readFileSync } from "node:fs";

const files = process.argv.length > 2 ? process.argv.slice(2) : ["test-results/vitest.json", "test-results/pytest.xml"];

function vitest(text) {
  const report = JSON.parse(text);
  const passed = report.numPassedTests ?? 0;
  const failedSuites = (report.testResults ?? []).filter((r) => r.status === "failed" && (r.assertionResults ?? []).length === 0).length;
  return { passed, failed: (report.numFailedTests ?? 0) + failedSuites };
}

function junit(text) {
  // Comments and CDATA may quote anything; drop them before looking at the tags. Only <testsuite>
  // elements are summed (a <testsuites> wrapper repeats their totals).
  const xml = text.replace(/<!--[\s\S]*?-->/g, "").replace(/<!\[CDATA\[[\s\S]*?\]\]>/g, "");
  const suites = [...xml.matchAll(/<testsuite(?=[\s/>])([^>]*)>/g)];
  if (suites.length === 0) throw new Error("no <testsuite> element");
  let passed = 0;
  let failed = 0;
  for (const [, attributes] of suites) {
    const count = (name) => {
      const m = attributes.match(new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`));
      const n = m ? Number(m[1] ?? m[2]) : 0;
      if (!Number.isInteger(n) || n < 0) throw new Error(`bad ${name}= on a <testsuite>`);
      return n;
    };
    const tests = count("tests");
    const bad = count("failures") + count("errors");
    failed += bad;
    passed += Math.max(0, tests - bad - count("skipped"));
  }
  return { passed, failed };
}

let passed = 0;
let failed = 0;
for (const file of files) {
  const kind = file.endsWith(".xml") ? "JUnit" : "vitest";
  try {
    const result = (kind === "JUnit" ? junit : vitest)(readFileSync(file, "utf8"));
    passed += result.passed;
    failed += result.failed;
  } catch (error) {
    console.log(`no usable ${kind} report at ${file} (counted as 1 failure): ${error.message}`);
    failed += 1;
  }
}
console.log(`tests: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
