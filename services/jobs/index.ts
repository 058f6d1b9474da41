// Training-job storage: job records, their inputs and the queue workers claim from. It sits below
// the services that read jobs (models, events through the composition root, training).
export { type TrainingJobRecord, TrainingJobs } from "./training-jobs.js";
