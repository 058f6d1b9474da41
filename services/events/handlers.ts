// Events service. Listing and watching job events arrive with the resources issue; until then they
// answer `unimplemented` after full request validation by the gateway.
import { Events } from "../../gen/srl/v1/events_pb.js";
import { defineHandlers } from "../gateway/pipeline.js";

export function eventsHandlers() {
  return defineHandlers(Events, {});
}
