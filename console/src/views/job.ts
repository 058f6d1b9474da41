// A training job followed live: its status, model and checkpoint, progress in gradient steps,
// throughput, curves of every metric its gradient steps report, those metrics as a table, and an
// error in plain sight when it fails. The raw event log stays, folded away.
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import type { TrainingJob } from "../../../gen/srl/v1/training_pb.js";
import { events, readable, training } from "../api.js";
import { RunCharts } from "../chart.js";
import { h, showError, statusBadge } from "../dom.js";
import { emptyState, formatNumber, plural, shortId, timeCell, timeLong } from "../format.js";
import { everyWhileShown, type ViewContext } from "../view.js";
import { cancellable, cancelJobButton } from "./job-actions.js";
import { JobProgress } from "./job-progress.js";
import { isTerminal, jobDuration } from "./job-time.js";
import { crumbs, modelTitle, playgroundHref } from "./links.js";
import { findModel } from "./run-data.js";
import "./views.css";

const REFRESH_MS = 2000;
/** Redraws are batched: a replayed job sends hundreds of events at once. */
const RENDER_DELAY_MS = 120;
const RECONNECT_MS = 2000;

export async function jobView(jobId: string, context: ViewContext): Promise<HTMLElement> {
  let job: TrainingJob;
  let model: Model | null;
  try {
    job = await training.getTrainingJob({ trainingJobId: jobId }, { signal: context.signal });
    model = await findModel(job.modelId, context.signal);
  } catch (error) {
    if (!context.signal.aborted) showError(readable(error));
    return h("section", {}, h("h1", {}, "Training job"), h("p", {}, "This job could not be read. ", h("a", { href: "#/" }, "Back to the models.")));
  }
  const progress = new JobProgress(job.type);
  const view = new JobPage(job, model, progress, (cancelled) => {
    job = cancelled;
    view.job = cancelled;
    view.render();
  });
  context.signal.addEventListener("abort", () => view.destroy());

  let schedule: ReturnType<typeof setTimeout> | undefined;
  const render = () => {
    schedule ??= setTimeout(() => {
      schedule = undefined;
      if (!context.signal.aborted) view.render();
    }, RENDER_DELAY_MS);
  };
  const refreshJob = async () => {
    if (isTerminal(job.status) && progress.finished) return;
    try {
      job = await training.getTrainingJob({ trainingJobId: jobId }, { signal: context.signal });
      view.job = job;
      render();
    } catch (error) {
      if (!context.signal.aborted) showError(readable(error));
    }
  };
  everyWhileShown(context, REFRESH_MS, refreshJob);
  void follow(jobId, progress, context.signal, () => {
    render();
    if (progress.finished) void refreshJob();
  });
  view.render();
  return view.element;
}

/** Reads the job's events until its terminal one, resuming after the last one seen if the stream drops. */
async function follow(jobId: string, progress: JobProgress, signal: AbortSignal, changed: () => void): Promise<void> {
  while (!signal.aborted && !progress.finished) {
    try {
      for await (const event of events.watchTrainingJobEvents({ trainingJobId: jobId, after: progress.lastEventId }, { signal })) {
        progress.apply(event);
        changed();
      }
      return;
    } catch (error) {
      if (signal.aborted) return;
      showError(`Lost the job's event stream (${readable(error)}); reconnecting…`);
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
      showError(null);
    }
  }
}

class JobPage {
  readonly element: HTMLElement;
  private readonly title = h("span", { class: "job-status" });
  /** The cancel button while the job is queued or running. */
  private readonly actions = h("div", { class: "job-actions" });
  private readonly facts = h("dl", { class: "facts" });
  private readonly bar = h("progress", { max: "1", value: "0" });
  private readonly counter = h("span", { "data-testid": "steps" }, "waiting for the trainer");
  private readonly totals = h("p", { class: "muted job-totals" });
  private readonly failure = h("div", { class: "job-error", role: "alert", hidden: "" });
  private readonly charts: RunCharts;
  private readonly stepsBox = h("div", { class: "table-scroll steps-scroll" });
  private readonly logSummary = h("summary", {}, "Event log");
  private readonly log = h("ol", { class: "event-log-list" });
  private renderedSteps = 0;
  private renderedEvents = 0;
  private columns = "";
  private stepsBody: HTMLElement | null = null;
  /** What the header shows, to rebuild it only when that changes (a link being clicked stays put). */
  private headerSignature = "";

  constructor(
    public job: TrainingJob,
    private readonly model: Model | null,
    private readonly progress: JobProgress,
    private readonly cancelled: (job: TrainingJob) => void,
  ) {
    this.charts = new RunCharts(emptyState(job.status === "failed" ? "This job reported no gradient steps." : "The curves start with the first gradient step."));
    const title = model ? modelTitle(model) : job.modelId.slice(0, 8);
    this.element = h(
      "div",
      { class: "job-page run-view" },
      h(
        "section",
        { class: "page-header" },
        crumbs(h("a", { href: `#/models/${job.modelId}`, "data-link": "model" }, title), `job ${job.id.slice(0, 8)}`),
        h("div", { class: "title-row" }, h("h1", {}, `${job.type.toUpperCase()} training job `, shortId(job.id), " ", this.title), this.actions),
        this.failure,
        this.facts,
        h("div", { class: "job-progress" }, this.bar, h("p", {}, this.counter)),
        this.totals,
      ),
      h("section", { class: "charts-section" }, h("h2", {}, "Curves"), this.charts.element),
      h("section", {}, h("h2", {}, "Gradient steps"), this.stepsBox),
      h("section", {}, h("details", { class: "event-log" }, this.logSummary, this.log)),
    );
  }

  destroy(): void {
    this.charts.destroy();
  }

  render(): void {
    const { job, progress } = this;
    const throughput = progress.throughput();
    const signature = JSON.stringify([job, jobDuration(job), progress.failure, throughput && Math.round(throughput.tokensPerSecond)]);
    if (signature !== this.headerSignature) {
      this.headerSignature = signature;
      this.title.replaceChildren(statusBadge(job.status));
      // Rebuilt only when it appears or goes, so a focused button keeps its focus while the job runs.
      if (cancellable(job) !== (this.actions.childElementCount > 0)) this.actions.replaceChildren(cancellable(job) ? cancelJobButton(job, this.cancelled, "Cancel job") : "");
      const error = job.errorMessage ?? progress.failure;
      this.failure.hidden = !(job.status === "failed" || progress.failure);
      if (!this.failure.hidden) this.failure.replaceChildren(h("strong", {}, "This job failed."), h("pre", { class: "error-message" }, error ?? "No reason was recorded."));
      this.facts.replaceChildren(...this.factRows());
    }
    const done = progress.steps.length;
    this.bar.max = Math.max(1, progress.total);
    this.bar.value = Math.min(done, this.bar.max);
    if (progress.started) this.counter.textContent = `${formatNumber(done)} of ${formatNumber(progress.total)} gradient steps`;
    else if (progress.failure !== null || job.status === "failed") this.counter.textContent = "failed before its first gradient step";
    else if (job.status === "queued") this.counter.textContent = "queued: waiting for a training worker";
    this.totals.textContent = totalsText(progress.totals);
    this.charts.update(progress.series(this.model?.name ?? "this job"));
    this.renderSteps();
    this.renderLog();
  }

  private factRows(): HTMLElement[] {
    const { job, model, progress } = this;
    const rows: HTMLElement[] = [];
    const fact = (term: string, ...value: (Node | string)[]) => rows.push(h("dt", {}, term), h("dd", {}, ...value));
    fact("Model", h("a", { href: `#/models/${job.modelId}` }, model ? modelTitle(model) : job.modelId), model ? h("span", { class: "muted" }, ` on ${model.baseModel}`) : "");
    if (job.status === "succeeded" && job.step !== undefined) {
      fact(
        "Checkpoint",
        h("a", { href: `#/models/${job.modelId}`, "data-link": "checkpoint" }, `step ${job.step}`),
        model ? " · " : "",
        model ? h("a", { href: playgroundHref(model, job.step), "data-link": "try" }, `try step ${job.step}`) : "",
      );
    }
    fact("Created", timeCell(job.createdAt));
    fact("Started", job.trainingStart ? timeLong(job.trainingStart) : "—");
    fact("Ended", job.trainingEnd ? timeLong(job.trainingEnd) : "—");
    fact("Duration", jobDuration(job));
    const throughput = progress.throughput();
    fact(
      "Throughput",
      throughput
        ? h(
            "span",
            { "data-fact": "tokens-per-second", title: `${formatNumber(throughput.tokens)} tokens in ${formatNumber(throughput.seconds)} s of the trainer's step time (preparation and checkpoint writing not counted)` },
            `${formatNumber(Math.round(throughput.tokensPerSecond))} tokens/s`,
          )
        : h("span", { class: "muted" }, progress.finished ? "— (no step reported its token counts)" : "— (no token counts yet)"),
    );
    return rows;
  }

  /** New steps go on top of the table; a new metric name rebuilds it. */
  private renderSteps(): void {
    const { steps } = this.progress;
    const names = this.progress.metricNames();
    if (steps.length === 0) {
      if (!this.stepsBody) this.stepsBox.replaceChildren(h("p", { class: "muted" }, this.progress.finished ? "No gradient steps." : "No gradient steps yet."));
      return;
    }
    if (names.join("\n") !== this.columns || !this.stepsBody) {
      this.columns = names.join("\n");
      this.renderedSteps = 0;
      this.stepsBody = h("tbody", {});
      this.stepsBox.replaceChildren(
        h("table", { class: "steps-table" }, h("thead", {}, h("tr", {}, h("th", { class: "sticky num" }, "Step"), ...names.map((name) => h("th", { class: "num", "data-metric": name }, name)))), this.stepsBody),
      );
    }
    const added = steps.slice(this.renderedSteps).map((record) =>
      h(
        "tr",
        { "data-step": String(record.step) },
        h("td", { class: "sticky num" }, formatNumber(record.step)),
        ...names.map((name) => {
          const value = record.metrics[name];
          return h("td", { class: "num" }, value === undefined ? "—" : formatNumber(value));
        }),
      ),
    );
    this.stepsBody.prepend(...added.reverse());
    this.renderedSteps = steps.length;
  }

  private renderLog(): void {
    const { events: all } = this.progress;
    for (const event of all.slice(this.renderedEvents)) {
      this.log.append(h("li", { "data-event": event.type }, h("strong", {}, event.type), h("pre", {}, JSON.stringify(event.data ?? {}, null, 1))));
    }
    this.renderedEvents = all.length;
    this.logSummary.textContent = `Event log (${plural(all.length, "event")})`;
  }
}

function totalsText(totals: Record<string, number>): string {
  const parts: string[] = [];
  const of = (name: string) => totals[name];
  const submitted = of("num_groups_submitted");
  const trainable = of("num_groups_trainable");
  if (submitted !== undefined) parts.push(`${formatNumber(submitted)} groups submitted${trainable !== undefined ? `, ${formatNumber(trainable)} trainable` : ""}`);
  const trajectories = of("num_trajectories");
  if (trajectories !== undefined) parts.push(`${formatNumber(trajectories)} trajectories`);
  const tokens = of("num_trainable_tokens");
  if (tokens !== undefined) parts.push(`${formatNumber(tokens)} trainable tokens`);
  return parts.join(" · ");
}
