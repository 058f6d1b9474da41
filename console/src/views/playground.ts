import { inference, readable } from "../api.js";
import { h, showError } from "../dom.js";

/** Streams a chat completion from any model name the API accepts (base model or checkpoint). */
export function playgroundView(): HTMLElement {
  const model = h("input", { name: "model", value: "tiny-chat", size: "50", "aria-label": "Model" });
  const prompt = h("textarea", { name: "prompt", "aria-label": "Prompt" });
  prompt.value = "Hello!";
  const output = h("pre", { "data-testid": "output" });
  const send = h("button", { type: "submit" }, "Send");
  const form = h(
    "form",
    {
      onsubmit: (event) => {
        event.preventDefault();
        output.textContent = "";
        send.setAttribute("disabled", "");
        void (async () => {
          try {
            const stream = inference.streamChatCompletion({ model: model.value, messages: [{ role: "user", content: { kind: { case: "stringValue", value: prompt.value } } }], maxTokens: 64 });
            for await (const chunk of stream) output.textContent += chunk.choices[0]?.delta?.content ?? "";
            showError(null);
          } catch (error) {
            showError(readable(error));
          } finally {
            send.removeAttribute("disabled");
          }
        })();
      },
    },
    model,
    prompt,
    send,
  );
  return h("section", {}, h("h1", {}, "Playground"), h("p", { class: "muted" }, "A base model (tiny-chat) or a checkpoint: wandb-artifact:///entity/project/name[:stepN]."), form, h("h2", {}, "Reply"), output);
}
