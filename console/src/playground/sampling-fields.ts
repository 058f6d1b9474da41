// The sampling controls (temperature, top_p, max tokens, seed, stop sequences) and what they read
// as; the browser's own constraint validation checks ranges before a request is built.
import { h } from "../dom.js";

export interface Sampling {
  temperature: number;
  topP: number;
  maxTokens: number;
  /** None: the server picks a random seed. */
  seed: bigint | undefined;
  stop: string[];
}

/** The defaults: a little randomness (0.7), no nucleus cut (1), room for a paragraph (256). */
export const DEFAULT_SAMPLING = { temperature: 0.7, topP: 1, maxTokens: 256 };

export interface SamplingFields {
  element: HTMLElement;
  read(): Sampling;
}

export function samplingFields(): SamplingFields {
  const temperature = h("input", { name: "temperature", type: "number", min: "0", max: "2", step: "0.01", required: "", value: String(DEFAULT_SAMPLING.temperature), inputmode: "decimal" });
  const topP = h("input", { name: "top_p", type: "number", min: "0.01", max: "1", step: "0.01", required: "", value: String(DEFAULT_SAMPLING.topP), inputmode: "decimal" });
  const maxTokens = h("input", { name: "max_tokens", type: "number", min: "1", step: "1", required: "", value: String(DEFAULT_SAMPLING.maxTokens), inputmode: "numeric" });
  // Text, not number: a seed is an int64, which a number field would round.
  const seed = h("input", { name: "seed", type: "text", pattern: "-?[0-9]{1,19}", placeholder: "random", inputmode: "numeric", autocomplete: "off", title: "A whole number; empty for none" });
  const stop = h("textarea", { name: "stop", rows: "2", placeholder: "one per line; \\n is a newline", spellcheck: "false" });
  const field = (label: string, input: HTMLElement, wide = false) => h("label", { class: wide ? "pg-field pg-wide" : "pg-field" }, h("span", {}, label), input);
  return {
    element: h(
      "fieldset",
      { class: "pg-sampling" },
      h("legend", {}, "Sampling"),
      field("Temperature", temperature),
      field("Top p", topP),
      field("Max tokens", maxTokens),
      field("Seed", seed),
      field("Stop sequences", stop, true),
      h("small", { class: "muted pg-wide" }, "Temperature 0 is greedy; a seed makes sampling repeatable."),
    ),
    read: () => ({
      temperature: Number(temperature.value),
      topP: Number(topP.value),
      maxTokens: Number(maxTokens.value),
      seed: seed.value.trim() === "" ? undefined : BigInt(seed.value.trim()),
      stop: stopSequences(stop.value),
    }),
  };
}

/** One sequence a line, with `\n` and `\t` written as escapes (a line cannot hold a newline). */
export function stopSequences(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => line.replace(/\\([nt\\])/g, (_, escape: string) => (escape === "n" ? "\n" : escape === "t" ? "\t" : "\\")));
}
