// The Evaluations service's face: a prompt set run on a model's checkpoints side by side, scored
// by one metric and kept with the model (its store is one of the model's dependents, deleted with it).
export { evaluationsHandlers } from "./handlers.js";
export { EvaluationStore } from "./store.js";
