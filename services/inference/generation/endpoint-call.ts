// What the chat and completions endpoints read of their RPC call. The service's handlers supply it
// (they alone know the RPC kernel); the caller and the body as sent are read when the endpoint
// gets to them, so its checks run in the same order whatever the transport.
import type { JsonObject } from "@bufbuild/protobuf";

export interface EndpointCall {
  /** The authenticated caller's entity: only its models resolve. */
  entity(): string;
  /** The request as the client sent it (JSON), for what the proto cannot hold as sent. */
  sent(): JsonObject;
  /** Sets a response header. */
  setHeader(name: string, value: string): void;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}
