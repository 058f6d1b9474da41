// The local trainer's shared secret: made once per installation (DATA_DIR/trainer-secret, mode
// 0600, readable by this user only) and handed to the trainer process in its environment, never
// in argv, which every user of the machine can read with `ps`. Any other local process can reach
// the trainer's loopback port, but not this file.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export const SECRET_FILE_NAME = "trainer-secret";

/** The installation's trainer secret, created (atomically: workers may share DATA_DIR) if missing. */
export function installationSecret(dataDir: string): string {
  const file = join(dataDir, SECRET_FILE_NAME);
  mkdirSync(dirname(file), { recursive: true });
  // Written whole under a name of its own, then linked into place: of several processes starting
  // at once one link wins (the others get EEXIST), and no reader ever sees a half-written file.
  if (!existsSync(file)) {
    const staging = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(staging, `${randomBytes(32).toString("base64url")}\n`, { flag: "wx", mode: 0o600 });
    try {
      linkSync(staging, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    } finally {
      rmSync(staging, { force: true });
    }
  }
  // A copy restored with looser permissions is tightened rather than trusted as it is.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const secret = readFileSync(file, "utf8").trim();
  if (secret.length < 16) throw new Error(`${file} holds no usable secret (delete it: a new one is made at the next start)`);
  return secret;
}
