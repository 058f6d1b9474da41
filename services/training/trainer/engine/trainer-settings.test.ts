// The trainer settings as the service starts with them: trainers named by URL need the shared
// secret (a configuration error at start, not a job failure later), URLs are http(s)://host:port,
// the CA file must be readable; the deadlines' defaults are the documented ones. The secret file of
// the local trainer is made once, 0600, and kept.
import { mkdtemp, readFile, rm, stat, writeFile, chmod } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../core/config.js";
import { TrainerPool } from "./trainer-pool.js";
import { installationSecret } from "./trainer-secret.js";
import { describeDuration, TRAINER_TIMEOUT_DEFAULTS, trainerSettings } from "./trainer-settings.js";

const base = { trainerUrls: [] as string[], trainerSecret: "", trainerCaFile: "", ...{ trainerCallTimeoutMs: 1_000, trainerJobTimeoutMs: 2_000 } };

describe("trainer settings", () => {
  it("default to a 15 min call and a 6 h job, as documented", () => {
    const config = loadConfig({});
    expect({ callTimeoutMs: config.trainerCallTimeoutMs, jobTimeoutMs: config.trainerJobTimeoutMs }).toEqual(TRAINER_TIMEOUT_DEFAULTS);
    expect([describeDuration(TRAINER_TIMEOUT_DEFAULTS.callTimeoutMs), describeDuration(TRAINER_TIMEOUT_DEFAULTS.jobTimeoutMs), describeDuration(6_000)]).toEqual(["15 min", "6 h", "6 s"]);
    expect(() => loadConfig({ TRAINER_JOB_TIMEOUT_MS: "10" })).toThrow(/TRAINER_JOB_TIMEOUT_MS=10 is not an integer between 1000/);
  });

  it("refuse remote trainers without a secret, and URLs or CA files that cannot be used", async () => {
    expect(() => trainerSettings({ ...base, trainerUrls: ["http://gpu1:7000"] })).toThrow(/TRAINER_URLS needs TRAINER_SECRET/);
    expect(() => trainerSettings({ ...base, trainerUrls: ["http://gpu1:7000"], trainerSecret: "short" })).toThrow(/at least 16 characters/);
    expect(() => trainerSettings({ ...base, trainerUrls: ["gpu1:7000"], trainerSecret: "x".repeat(16) })).toThrow(/is not http:\/\/host:port or https:\/\/host:port/);
    expect(() => trainerSettings({ ...base, trainerCaFile: "/nonexistent/ca.pem" })).toThrow(/TRAINER_CA_FILE \/nonexistent\/ca.pem cannot be read/);
    expect(() => new TrainerPool(["http://gpu1:7000"], null, { secret: "", ca: undefined, ...TRAINER_TIMEOUT_DEFAULTS })).toThrow(/need their shared secret/);
    const dir = await mkdtemp(join(tmpdir(), "trainer-settings-"));
    try {
      await writeFile(join(dir, "ca.pem"), "-----BEGIN CERTIFICATE-----\n");
      expect(trainerSettings({ ...base, trainerUrls: ["https://gpu1:7000"], trainerSecret: "x".repeat(16), trainerCaFile: join(dir, "ca.pem") })).toMatchObject({ secret: "x".repeat(16), ca: "-----BEGIN CERTIFICATE-----\n", callTimeoutMs: 1_000, jobTimeoutMs: 2_000 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("make the local trainer's secret once, readable by this user only", async () => {
    const dir = await mkdtemp(join(tmpdir(), "trainer-secret-"));
    try {
      const secret = installationSecret(dir);
      expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect((await stat(join(dir, "trainer-secret"))).mode & 0o777).toBe(0o600);
      expect(installationSecret(dir)).toBe(secret);
      await chmod(join(dir, "trainer-secret"), 0o644); // restored from a backup with looser permissions
      expect(installationSecret(dir)).toBe(secret);
      expect((await stat(join(dir, "trainer-secret"))).mode & 0o777).toBe(0o600);
      expect((await readFile(join(dir, "trainer-secret"), "utf8")).trim()).toBe(secret);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
