// Errors the engine reports to the gateway with a kind the gateway maps to a status.
export class EngineRequestError extends Error {
  constructor(
    readonly kind: "bad_request" | "overloaded" | "not_found" | "unavailable" | "internal",
    message: string,
  ) {
    super(message);
  }
}
