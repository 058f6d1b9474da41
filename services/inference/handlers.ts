// Inference service. Chat completions arrive with the engine issue; until then they answer
// `unimplemented` after full request validation by the gateway.
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { defineHandlers } from "../gateway/pipeline.js";

export function inferenceHandlers() {
  return defineHandlers(Inference, {});
}
