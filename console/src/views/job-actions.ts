// Cancelling a queued or running training job, after a confirmation; shared by the model page's
// jobs table and the job page.
import type { TrainingJob } from "../../../gen/srl/v1/training_pb.js";
import { training } from "../api.js";
import { confirmAction } from "../confirm.js";
import { h } from "../dom.js";
import "./views.css";

export function cancellable(job: TrainingJob): boolean {
  return job.status === "queued" || job.status === "running";
}

/** A "Cancel" button; `cancelled` gets the job as the API returns it after the cancel. */
export function cancelJobButton(job: TrainingJob, cancelled: (job: TrainingJob) => void, label = "Cancel"): HTMLButtonElement {
  const name = `${job.type.toUpperCase()} job ${job.id.slice(0, 8)}`;
  const button = h("button", { type: "button", class: "secondary danger-outline", "data-cancel-job": job.id, "aria-label": `${label} ${name}` }, label);
  button.addEventListener("click", () => {
    let after: TrainingJob | null = null;
    void confirmAction({
      title: `Cancel ${name}?`,
      message: [
        h(
          "p",
          {},
          "The ",
          h("strong", {}, name),
          job.status === "running" ? " stops and makes no checkpoint." : " leaves the queue without training.",
          " It ends as failed (\"cancelled\"); the model and its other checkpoints stay.",
        ),
      ],
      confirmLabel: "Cancel the job",
      cancelLabel: "Keep it",
      action: async () => {
        after = await training.cancelTrainingJob({ trainingJobId: job.id });
      },
    }).then((done) => {
      if (done && after) cancelled(after);
      else button.focus();
    });
  });
  return button;
}
