// Training service. Job creation, reading and cancelling arrive with the training-jobs issue; until
// then they answer `unimplemented` after full request validation by the gateway.
import { Training } from "../../gen/srl/v1/training_pb.js";
import { defineHandlers } from "../gateway/pipeline.js";

export function trainingHandlers() {
  return defineHandlers(Training, {});
}
