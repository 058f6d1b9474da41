// The Events service's face: the append-only event log of training jobs and its RPC handlers.
export { EventLog } from "./event-log.js";
export { eventsHandlers } from "./handlers.js";
