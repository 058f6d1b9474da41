import { events, readable, training } from "../api.js";
import { h, showError, statusBadge } from "../dom.js";

/** A job, following WatchTrainingJobEvents live: progress against num_sequences, the last metrics. */
export function jobView(jobId: string): HTMLElement {
  const status = h("span", {}, "…");
  const progress = h("progress", { max: "1", value: "0" });
  const counter = h("span", { class: "muted", "data-testid": "steps" }, "0 steps");
  const log = h("table", {}, h("tr", {}, h("th", {}, "Event"), h("th", {}, "Data")));
  const view = h("section", {}, h("h1", {}, `Training job ${jobId.slice(0, 8)}`), h("p", {}, "Status: ", status), progress, h("p", {}, counter), h("h2", {}, "Events"), log);
  const refreshStatus = () =>
    training.getTrainingJob({ trainingJobId: jobId }).then(
      (job) => status.replaceChildren(statusBadge(job.status), job.errorMessage ? ` ${job.errorMessage}` : ""),
      (error: unknown) => showError(readable(error)),
    );
  void refreshStatus();
  void (async () => {
    let total = 0;
    let steps = 0;
    try {
      for await (const event of events.watchTrainingJobEvents({ trainingJobId: jobId })) {
        const data = event.data ?? {};
        if (event.type === "training_started") total = Number(data.num_sequences ?? 0);
        if (event.type === "gradient_step") steps++;
        progress.max = Math.max(1, total);
        progress.value = steps;
        counter.textContent = `${steps} of ${total} steps`;
        log.append(h("tr", { "data-event": event.type }, h("td", {}, event.type), h("td", { class: "muted" }, JSON.stringify(data))));
        void refreshStatus();
      }
    } catch (error) {
      showError(readable(error));
    }
  })();
  return view;
}
