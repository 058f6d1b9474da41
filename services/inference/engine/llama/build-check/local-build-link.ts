// Where a candidate build is linked so node-llama-cpp loads it under a name of its own, without
// touching the default local build other processes load: node-llama-cpp looks a local build up in
// llama/localBuilds/<platform>-<arch>[-<hash of its custom cmake options>]. The hash is theirs
// (getBuildFolderNameForBuildOptions: SHA-1 of "KEY=value" pairs, bytes in base 36); should it
// change, the candidate is not found, the prebuilt binary loads instead and the check says so.
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
// The package's entry is dist/index.js (its package.json is not exported).
const LOCAL_BUILDS = join(dirname(require.resolve("node-llama-cpp")), "..", "llama", "localBuilds");

/** The folder node-llama-cpp loads for loadLlama("auto", name); undefined name: the default one. */
export function localBuildFolder(name?: string): string {
  const base = `${process.platform}-${process.arch}`;
  if (name === undefined) return join(LOCAL_BUILDS, base);
  const digest = createHash("sha1").update(`SRL_BINARY=${encodeURIComponent(name)}`).digest();
  return join(LOCAL_BUILDS, `${base}-${Array.from(digest, (byte) => byte.toString(36)).join("")}`);
}

/** Points the folder of `name` at a build directory (replacing what was there); returns a remover. */
export function linkLocalBuild(buildDir: string, name?: string): () => void {
  const folder = localBuildFolder(name);
  replaceWithLink(buildDir, folder);
  return () => rmSync(folder, { recursive: true, force: true });
}

/** Makes `link` a symbolic link to `target`, replacing whatever is there (a build directory too). */
export function replaceWithLink(target: string, link: string): void {
  mkdirSync(dirname(link), { recursive: true });
  const temporary = `${link}.tmp.${process.pid}`;
  rmSync(temporary, { recursive: true, force: true });
  symlinkSync(target, temporary);
  // A link is replaced by the rename at once; a real directory must go first.
  if (!lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) rmSync(link, { recursive: true, force: true });
  renameSync(temporary, link);
}
