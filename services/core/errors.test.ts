// The one error mapping, for the database's failures: what the MongoDB driver lets out when the
// database dies is a 503 (retry), not a 500.
import { createServer, connect, type Socket } from "node:net";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { isDatabaseUnavailable, toConnectError } from "./errors.js";

/** The error Node raises writing to a socket whose other end has closed (what the driver hit). */
async function writeAfterFinError(): Promise<NodeJS.ErrnoException> {
  const server = createServer((socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  try {
    const client: Socket = connect({ port, host: "127.0.0.1" });
    client.resume(); // "end" comes once what was sent is read
    await new Promise((resolve) => client.once("end", resolve));
    await new Promise((resolve) => setImmediate(resolve)); // our side ends too (no half-open)
    return await new Promise<NodeJS.ErrnoException>((resolve) => {
      client.once("error", resolve);
      client.write("after the end", (error) => error && resolve(error));
    });
  } finally {
    server.close();
  }
}

describe("database errors", () => {
  it("maps a socket the dead database ended, raised inside the driver, to unavailable", async () => {
    const error = await writeAfterFinError();
    expect(error).toMatchObject({ code: "EPIPE", message: "This socket has been ended by the other party" });
    // Not from the driver: this service's own fault, a 500.
    expect(isDatabaseUnavailable(error)).toBe(false);
    expect(toConnectError(error).code).toBe(Code.Internal);
    // As the driver's Connection.writeCommand throws it (the stack the server logged).
    error.stack = `${error.message}\n    at Socket.writeAfterFIN (node:net:566:14)\n    at Connection.writeCommand (/srv/app/node_modules/mongodb/src/cmap/connection.ts:713:23)`;
    expect(isDatabaseUnavailable(error)).toBe(true);
    const mapped = toConnectError(error);
    expect(mapped.code).toBe(Code.Unavailable);
    expect(mapped.rawMessage).toContain("the database is unavailable, try again shortly");
  });
});
