// Copyable code that uses a checkpoint: curl, Python's `openai` client and ART, filled with the
// name the checkpoint is served under and this service's base URL. The key stays a variable
// ($SRL_API_KEY, as in the README): a snippet never carries the signed-in key.
import type { Model } from "../../gen/srl/v1/models_pb.js";
import { h } from "./dom.js";
import { apiBase } from "./format.js";
import { checkpointName } from "./views/links.js";
import "./views/views.css";

type Client = "curl" | "python" | "art";

const CLIENTS: [Client, string][] = [
  ["curl", "curl"],
  ["python", "Python (openai)"],
  ["art", "ART"],
];

/** The code of each client for `step` of `model`. */
export function snippetText(client: Client, model: Model, step: number): string {
  const served = checkpointName(model, step);
  const base = apiBase();
  if (client === "curl") {
    const body = JSON.stringify({ model: served, messages: [{ role: "user", content: "Hello!" }] });
    return `curl -s ${base}/chat/completions \\\n  -H "Authorization: Bearer $SRL_API_KEY" -H "Content-Type: application/json" \\\n  -d '${body}'`;
  }
  if (client === "python") {
    return [
      "import os",
      "from openai import OpenAI",
      "",
      `client = OpenAI(base_url="${base}", api_key=os.environ["SRL_API_KEY"])`,
      "reply = client.chat.completions.create(",
      `    model="${served}",`,
      '    messages=[{"role": "user", "content": "Hello!"}],',
      ")",
      "print(reply.choices[0].message.content)",
    ].join("\n");
  }
  return [
    "import asyncio, os",
    "import art",
    "from art.serverless.backend import ServerlessBackend",
    "",
    "async def main():",
    `    backend = ServerlessBackend(api_key=os.environ["SRL_API_KEY"], base_url="${base}")`,
    "    # run_name is the name this service registers the model under (ART 0.5.18: leave it out)",
    `    model = art.TrainableModel(name="${model.name}", run_name="${model.name}", project="${model.project}", base_model="${model.baseModel}")`,
    "    await model.register(backend)  # this model, at its latest step",
    "    reply = await model.openai_client().chat.completions.create(",
    "        model=model.get_inference_name(),",
    '        messages=[{"role": "user", "content": "Hello!"}],',
    "    )",
    "    print(reply.choices[0].message.content)",
    "    # then: await backend.train(model, groups) makes the next step",
    "",
    "asyncio.run(main())",
  ].join("\n");
}

/** Tabs (one per client), the code, and a copy button; `show` changes the checkpoint in place. */
export class Snippets {
  readonly element: HTMLElement;
  private client: Client = "curl";
  private readonly code = h("code", {});
  private readonly copy = h("button", { type: "button", class: "secondary snippet-copy", "data-copy-snippet": "" }, "Copy");
  private readonly tabs: HTMLButtonElement[];
  private current: { model: Model; step: number } | null = null;
  private readonly panel: HTMLElement;
  private static made = 0;

  constructor() {
    const id = `snippets-${++Snippets.made}`;
    const panel = h("div", { role: "tabpanel", id: `${id}-panel`, class: "snippet-panel" }, h("pre", { class: "snippet" }, this.code), this.copy);
    this.panel = panel;
    this.tabs = CLIENTS.map(([client, label]) => {
      const tab = h("button", { type: "button", role: "tab", id: `${id}-${client}`, "aria-controls": panel.id, "data-client": client }, label);
      tab.addEventListener("click", () => this.select(client, false));
      return tab;
    });
    // Arrow keys move between tabs (the tablist pattern); Tab goes on to the code's copy button.
    const list = h("div", { role: "tablist", class: "snippet-tabs", "aria-label": "Client" }, ...this.tabs);
    list.addEventListener("keydown", (event) => {
      const move = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
      if (move === 0) return;
      event.preventDefault();
      const index = CLIENTS.findIndex(([client]) => client === this.client);
      const next = CLIENTS[(index + move + CLIENTS.length) % CLIENTS.length];
      if (next) this.select(next[0], true);
    });
    this.copy.addEventListener("click", () => void this.copyCode());
    this.element = h("div", { class: "snippets" }, list, panel);
    this.select("curl", false);
  }

  show(model: Model, step: number): void {
    this.current = { model, step };
    this.render();
  }

  private select(client: Client, focus: boolean): void {
    this.client = client;
    for (const tab of this.tabs) {
      const on = tab.dataset.client === client;
      tab.setAttribute("aria-selected", String(on));
      tab.tabIndex = on ? 0 : -1;
      if (on && focus) tab.focus();
    }
    this.panel.setAttribute("aria-labelledby", this.tabs.find((tab) => tab.dataset.client === client)?.id ?? "");
    this.render();
  }

  private render(): void {
    if (!this.current) return;
    this.code.textContent = snippetText(this.client, this.current.model, this.current.step);
    this.code.dataset.client = this.client;
  }

  private async copyCode(): Promise<void> {
    try {
      await navigator.clipboard.writeText(this.code.textContent ?? "");
      this.flash("Copied");
    } catch {
      // No clipboard (an insecure origin): select the code so Ctrl+C copies it.
      const range = document.createRange();
      range.selectNodeContents(this.code);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      this.flash("Selected: press Ctrl+C");
    }
  }

  private flash(text: string): void {
    this.copy.textContent = text;
    setTimeout(() => (this.copy.textContent = "Copy"), 1500);
  }
}
