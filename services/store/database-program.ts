// What the launcher and the supervisor need to know about one kind of embedded database.
export type DatabaseKind = "mongod" | "ferretdb";

export type LauncherLog = (
  level: "info" | "warn" | "error",
  msg: string,
  fields?: Record<string, unknown>,
) => void;

export interface DatabaseProgram {
  kind: DatabaseKind;
  bin: string;
  args(port: number): string[];
  /** The URI clients connect with, without a database name. */
  uri(port: number): string;
  /** Run after every start once it answers ping, before clients are told it is up. */
  prepare(port: number): Promise<void>;
}
