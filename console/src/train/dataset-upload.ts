// Step 1 of the train view: SFT data from a file (chosen or dropped) or pasted text, checked line by
// line in the page; only data without errors can be uploaded, with a progress bar.
import { h } from "../dom.js";
import { formatNumber, plural } from "../format.js";
import { checkFile, checkText, type JsonlReport } from "./jsonl-check.js";
import { uploadDataset, type UploadedArtifact } from "./upload.js";

const EXAMPLE = '{"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}]}';
const PASTE_CHECK_DELAY_MS = 250;

type Source = { kind: "file"; file: File } | { kind: "text"; text: string };

export function datasetUpload(options: { project: string; defaultName: string; signal: AbortSignal; onUploaded: (artifact: UploadedArtifact) => void }): HTMLElement {
  const fileInput = h("input", { type: "file", id: "train-file", accept: ".jsonl,.json,.txt,application/jsonl,application/json,text/plain" });
  const dropZone = h(
    "label",
    { class: "drop-zone", for: "train-file" },
    h("strong", {}, "Choose a .jsonl file"),
    " or drop it here",
    fileInput,
  );
  const paste = h("textarea", { id: "train-paste", rows: "5", spellcheck: "false", placeholder: EXAMPLE });
  const nameInput = h("input", { id: "train-dataset-name", name: "dataset-name", value: options.defaultName, required: "", autocomplete: "off" });
  const result = h("div", { class: "check-result", role: "status", "aria-live": "polite" });
  const uploadButton = h("button", { type: "button", disabled: "" }, "Upload");
  const bar = h("progress", { id: "train-upload-progress", max: "1", value: "0" });
  const percent = h("span", { class: "upload-percent", "data-testid": "upload-percent" }, "0%");
  const progressRow = h("div", { class: "upload-progress", hidden: "" }, h("label", { for: "train-upload-progress" }, "Upload progress"), bar, percent);
  const uploaded = h("p", { class: "uploaded", hidden: "" });

  let source: Source | null = null;
  let report: JsonlReport | null = null;
  let checking: AbortController | null = null;
  let uploading = false;
  /** The data and name last uploaded: Upload stays off until one changes (a repeat would only add a version). */
  let done: { source: Source; name: string } | null = null;

  const refreshButton = () => {
    const ready = source !== null && !(done?.source === source && done.name === nameInput.value.trim()) && report !== null && report.errorCount === 0 && !uploading && nameInput.value.trim() !== "";
    uploadButton.toggleAttribute("disabled", !ready);
  };

  const check = async (next: Source) => {
    checking?.abort();
    const mine = new AbortController();
    checking = mine;
    options.signal.addEventListener("abort", () => mine.abort(), { once: true });
    source = next;
    report = null;
    uploaded.hidden = true;
    refreshButton();
    try {
      if (next.kind === "text") report = checkText(next.text);
      else {
        result.replaceChildren(h("p", {}, `Checking ${next.file.name}…`));
        report = await checkFile(next.file, mine.signal, (bytes, so) => {
          result.replaceChildren(h("p", {}, `Checking ${next.file.name}: ${Math.floor((bytes / Math.max(1, next.file.size)) * 100)}%, ${plural(so.conversations, "conversation")} so far…`));
        });
      }
    } catch (error) {
      if (mine.signal.aborted) return;
      result.replaceChildren(h("p", { class: "check-failed" }, `The file could not be read (${error instanceof Error ? error.message : String(error)}). Choose it again.`));
      return;
    }
    if (mine.signal.aborted) return;
    result.replaceChildren(...reportView(report, next));
    refreshButton();
  };

  // Cleared as the chooser opens, so choosing the same file again (fixed) is a change and is checked.
  fileInput.addEventListener("click", () => (fileInput.value = ""));
  fileInput.addEventListener("change", () => {
    const file = fileInput.files?.[0];
    if (file) {
      paste.value = "";
      void check({ kind: "file", file });
    }
  });
  for (const type of ["dragenter", "dragover"]) {
    dropZone.addEventListener(type, (event) => {
      event.preventDefault();
      dropZone.classList.add("dragging");
    });
  }
  dropZone.addEventListener("dragleave", () => dropZone.classList.remove("dragging"));
  dropZone.addEventListener("drop", (event) => {
    event.preventDefault();
    dropZone.classList.remove("dragging");
    const file = (event as DragEvent).dataTransfer?.files[0];
    if (!file) return;
    paste.value = "";
    fileInput.value = "";
    void check({ kind: "file", file });
  });
  let pasteTimer: ReturnType<typeof setTimeout> | undefined;
  paste.addEventListener("input", () => {
    clearTimeout(pasteTimer);
    fileInput.value = "";
    const text = paste.value;
    if (text.trim() === "") {
      source = null;
      report = null;
      result.replaceChildren();
      refreshButton();
      return;
    }
    pasteTimer = setTimeout(() => void check({ kind: "text", text }), PASTE_CHECK_DELAY_MS);
  });
  nameInput.addEventListener("input", refreshButton);

  uploadButton.addEventListener("click", () => {
    if (!source || !report || report.errorCount > 0) return;
    const current = { source, name: nameInput.value.trim() };
    const body = source.kind === "file" ? source.file : new Blob([source.text], { type: "application/jsonl" });
    uploading = true;
    refreshButton();
    progressRow.hidden = false;
    uploaded.hidden = true;
    const setProgress = (fraction: number) => {
      bar.value = fraction;
      percent.textContent = `${Math.round(fraction * 100)}%`;
    };
    setProgress(0);
    uploadDataset(body, { project: options.project, name: current.name }, setProgress, options.signal).then(
      (artifact) => {
        uploading = false;
        done = current;
        refreshButton();
        uploaded.hidden = false;
        uploaded.className = "uploaded";
        uploaded.removeAttribute("role");
        uploaded.replaceChildren("Uploaded ", h("code", {}, `${artifact.name}:v${artifact.version}`), ` (${bytes(body.size)}). It is filled in as the SFT job's data below.`);
        options.onUploaded(artifact);
      },
      (error: unknown) => {
        uploading = false;
        refreshButton();
        if (options.signal.aborted) return;
        uploaded.hidden = false;
        uploaded.className = "uploaded failed";
        uploaded.setAttribute("role", "alert");
        uploaded.textContent = error instanceof Error ? error.message : String(error);
      },
    );
  });

  return h(
    "section",
    { class: "train-step", "aria-labelledby": "train-data-title" },
    h("h2", { id: "train-data-title" }, "1. Upload SFT data"),
    h("p", { class: "muted" }, "JSON Lines: one conversation per line, the last message the assistant's (the reply it learns). ", h("code", {}, "tools"), " may list the tools offered. For example:"),
    h("pre", { class: "snippet" }, EXAMPLE),
    dropZone,
    h("label", { for: "train-paste", class: "block-label" }, "Or paste JSONL"),
    paste,
    result,
    h("div", { class: "train-fields" }, h("label", { for: "train-dataset-name" }, "Dataset name"), nameInput, h("span", { class: "muted hint" }, `saved in project ${options.project}; each upload of a name is a new version v0, v1, …`)),
    h("div", { class: "train-actions" }, uploadButton),
    progressRow,
    uploaded,
  );
}

function reportView(report: JsonlReport, source: Source): HTMLElement[] {
  const summary = h(
    "p",
    { class: "check-summary", "data-errors": String(report.errorCount) },
    source.kind === "file" ? `${source.file.name} (${bytes(source.file.size)}): ` : "Pasted text: ",
    `${plural(report.lines, "line")}, ${plural(report.conversations, "conversation")}, about ${formatNumber(report.characters)} characters of messages`,
    report.errorCount === 0 ? ". Ready to upload." : `, ${plural(report.errorCount, "error")}.`,
  );
  if (report.errorCount === 0) return [summary];
  const fix = source.kind === "file" ? "Fix these lines and choose the file again." : "Fix these lines in the text above.";
  const more = report.errorCount > report.errors.length ? h("p", { class: "muted" }, `…and ${plural(report.errorCount - report.errors.length, "more error")} not listed.`) : null;
  return [summary, h("p", { class: "check-failed" }, `Nothing is uploaded while the data has errors. ${fix}`), h("ul", { class: "line-errors" }, ...report.errors.map((error) => h("li", {}, error))), ...(more ? [more] : [])];
}

function bytes(size: number): string {
  if (size < 1024) return `${size} B`;
  if (size < 1024 ** 2) return `${(size / 1024).toFixed(1)} kB`;
  if (size < 1024 ** 3) return `${(size / 1024 ** 2).toFixed(1)} MB`;
  return `${(size / 1024 ** 3).toFixed(2)} GB`;
}
