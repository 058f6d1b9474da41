import { models, readable, training } from "../api.js";
import { lineChart, seriesColor } from "../chart.js";
import { h, showError, statusBadge } from "../dom.js";

const CHARTED = /reward|loss|grad_norm/;

/** A model: its checkpoints with metrics, its run's curves, its jobs (refreshed while any runs). */
export async function modelView(modelId: string, isCurrent: () => boolean): Promise<HTMLElement> {
  const section = h("div", {});
  const render = async () => {
    try {
      const [checkpoints, jobs] = await Promise.all([models.listCheckpoints({ modelId, limit: 100, order: "desc" }), training.listTrainingJobs({ modelId, limit: 20 })]);
      const list = await models.listModels({ limit: 100 });
      const model = list.data.find((m) => m.id === modelId);
      const metrics = model?.runId ? await models.listRunMetrics({ runId: model.runId, limit: 1000 }) : null;
      const series = new Map<string, { step: number; value: number }[]>();
      for (const point of metrics?.data ?? []) {
        if (!CHARTED.test(point.name)) continue;
        series.set(point.name, [...(series.get(point.name) ?? []), { step: point.step, value: point.value }]);
      }
      section.replaceChildren(
        h("h1", {}, model ? `${model.project}/${model.name}` : modelId),
        h("section", {}, h("h2", {}, "Run curves"), series.size === 0 ? h("p", { class: "muted" }, "No metrics yet.") : lineChart(series), h("div", { class: "legend" }, ...[...series.keys()].map((name, i) => h("span", { style: `color:${seriesColor(i)}` }, `■ ${name}`)))),
        h(
          "section",
          {},
          h("h2", {}, "Checkpoints"),
          h(
            "table",
            {},
            h("tr", {}, h("th", {}, "Step"), h("th", {}, "Metrics"), h("th", {}, "Adapter")),
            ...checkpoints.data.map((c) =>
              h(
                "tr",
                {},
                h("td", {}, c.step),
                h("td", { class: "muted" }, Object.entries(c.metrics).map(([k, v]) => `${k}=${v.toPrecision(4)}`).join("  ")),
                // Step 0 is the base model itself: nothing to download.
                h("td", {}, model && c.step > 0 ? downloadButton(`${model.project}/${model.name}:step${c.step}`) : ""),
              ),
            ),
          ),
        ),
        h(
          "section",
          {},
          h("h2", {}, "Training jobs"),
          jobs.data.length === 0
            ? h("p", { class: "muted" }, "No training jobs yet.")
            : h("table", {}, h("tr", {}, h("th", {}, "Job"), h("th", {}, "Type"), h("th", {}, "Status"), h("th", {}, "Step"), h("th", {}, "Created")), ...jobs.data.map((j) => h("tr", {}, h("td", {}, h("a", { href: `#/jobs/${j.id}` }, j.id.slice(0, 8))), h("td", {}, j.type), h("td", {}, statusBadge(j.status)), h("td", {}, j.step ?? ""), h("td", { class: "muted" }, j.createdAt)))),
        ),
      );
      showError(null);
    } catch (error) {
      showError(readable(error));
    }
  };
  await render();
  const timer = setInterval(() => (isCurrent() ? void render() : clearInterval(timer)), 2000);
  return section;
}

/** Downloads a checkpoint's adapter through the API (the key stays in a header, never in a URL). */
function downloadButton(url: string): HTMLElement {
  const button = h("button", { type: "button", class: "link", "data-download": url }, "download");
  button.addEventListener("click", () => {
    void (async () => {
      button.textContent = "downloading…";
      try {
        const parts: Uint8Array<ArrayBuffer>[] = [];
        let filename = "adapter.gguf";
        for await (const chunk of training.downloadArtifactFile({ url })) {
          if (chunk.filename) filename = chunk.filename;
          parts.push(new Uint8Array(chunk.data));
        }
        const link = h("a", { href: URL.createObjectURL(new Blob(parts, { type: "application/octet-stream" })), download: filename });
        link.click();
        setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
        showError(null);
      } catch (error) {
        showError(readable(error));
      } finally {
        button.textContent = "download";
      }
    })();
  });
  return button;
}
