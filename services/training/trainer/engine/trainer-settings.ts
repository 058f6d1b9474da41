// How the worker talks to trainers: the secret and CA for TRAINER_URLS trainers, and the deadlines
// of every trainer call (README: Configuration). The local trainer's secret is its own
// (./trainer-secret.ts); its deadlines are these.
import { readFileSync } from "node:fs";
import type { Config } from "../../../core/config.js";

export interface TrainerSettings {
  /** Sent to TRAINER_URLS trainers; "" only when there are none. */
  secret: string;
  /** PEM roots trusted for https:// trainers; undefined: the system's. */
  ca: string | undefined;
  /** Describe, InspectBaseModel, ConvertAdapter. */
  callTimeoutMs: number;
  /** A job's Train or Score call, waiting for a free trainer included. */
  jobTimeoutMs: number;
}

/** The deadlines' defaults (generous: a 6 h job, a 15 min call that may fetch an hf: model's header). */
export const TRAINER_TIMEOUT_DEFAULTS = { callTimeoutMs: 900_000, jobTimeoutMs: 21_600_000 } as const;
const MIN_SECRET_CHARS = 16;

type TrainerConfig = Pick<Config, "trainerUrls" | "trainerSecret" | "trainerCaFile" | "trainerCallTimeoutMs" | "trainerJobTimeoutMs">;

/** Checked at start: a remote trainer without a secret, or a URL that is neither http nor https, is a configuration error. */
export function trainerSettings(config: TrainerConfig): TrainerSettings {
  for (const url of config.trainerUrls) {
    if (!/^https?:\/\/[^/]+\/?$/.test(url)) throw new Error(`TRAINER_URLS entry ${url} is not http://host:port or https://host:port`);
  }
  if (config.trainerUrls.length > 0 && config.trainerSecret.length < MIN_SECRET_CHARS) {
    throw new Error(`TRAINER_URLS needs TRAINER_SECRET (at least ${MIN_SECRET_CHARS} characters), the secret each of those trainers was started with (its TRAINER_SECRET)`);
  }
  let ca: string | undefined;
  if (config.trainerCaFile) {
    try {
      ca = readFileSync(config.trainerCaFile, "utf8");
    } catch (error) {
      throw new Error(`TRAINER_CA_FILE ${config.trainerCaFile} cannot be read: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { secret: config.trainerSecret, ca, callTimeoutMs: config.trainerCallTimeoutMs, jobTimeoutMs: config.trainerJobTimeoutMs };
}

/** "6 h", "15 min", "4 s": a deadline as an error message names it. */
export function describeDuration(ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 100) / 10} s`;
}
