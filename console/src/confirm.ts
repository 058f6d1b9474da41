// A confirmation for destructive actions: a modal <dialog> that names what will go, optionally asks
// to type its name first (as GitHub does before deleting a repository), runs the action while it
// stays open and shows the action's error in place, so the person can fix it or cancel.
import { readable } from "./api.js";
import { h } from "./dom.js";
import "./views/views.css";

export interface ConfirmOptions {
  title: string;
  /** What happens, in words; name the thing that will be deleted. */
  message: (Node | string)[];
  /** The confirming button's text ("Delete model"). */
  confirmLabel: string;
  /** The dismissing button's text. */
  cancelLabel?: string;
  /** When set, the confirming button stays disabled until exactly this is typed. */
  typeToConfirm?: string;
  /** Runs on confirmation; a thrown error is shown in the dialog, which stays open. */
  action: () => Promise<void>;
}

let opened = 0;

/** Opens the dialog; resolves true once the action succeeded, false when dismissed. */
export function confirmAction(options: ConfirmOptions): Promise<boolean> {
  const id = `confirm-${++opened}`;
  const error = h("p", { class: "confirm-error", role: "alert", hidden: "" });
  const confirm = h("button", { type: "submit", class: "danger", "data-confirm": "" }, options.confirmLabel);
  const cancel = h("button", { type: "button", class: "secondary", "data-dismiss": "" }, options.cancelLabel ?? "Cancel");
  const typed = options.typeToConfirm === undefined ? null : h("input", { type: "text", id: `${id}-typed`, name: "confirm-name", autocomplete: "off", spellcheck: "false", "aria-describedby": `${id}-message` });
  const form = h(
    "form",
    { method: "dialog", class: "confirm-form" },
    h("h2", { id: `${id}-title` }, options.title),
    h("div", { id: `${id}-message`, class: "confirm-message" }, ...options.message),
    typed ? h("label", { for: typed.id }, "Type ", h("strong", { class: "confirm-name" }, options.typeToConfirm ?? ""), " to confirm") : null,
    typed,
    error,
    h("div", { class: "confirm-buttons" }, cancel, confirm),
  );
  const dialog = h("dialog", { class: "confirm-dialog", "aria-labelledby": `${id}-title`, "aria-describedby": `${id}-message` }, form);
  if (typed) {
    confirm.toggleAttribute("disabled", true);
    typed.addEventListener("input", () => confirm.toggleAttribute("disabled", typed.value !== options.typeToConfirm));
  }
  document.body.append(dialog);

  return new Promise((resolve) => {
    let done = false;
    let working = false;
    const finish = (result: boolean) => {
      if (done) return;
      done = true;
      if (dialog.open) dialog.close();
      dialog.remove();
      resolve(result);
    };
    // Escape and the cancel button both close it; closing before success means "no".
    dialog.addEventListener("close", () => finish(false));
    // While the action runs, Escape waits for its answer (the person sees it succeed or fail).
    dialog.addEventListener("cancel", (event) => {
      if (working) event.preventDefault();
    });
    cancel.addEventListener("click", () => finish(false));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (typed && typed.value !== options.typeToConfirm) return;
      void (async () => {
        working = true;
        confirm.toggleAttribute("disabled", true);
        cancel.toggleAttribute("disabled", true);
        error.hidden = true;
        const label = confirm.textContent;
        confirm.textContent = "Working…";
        try {
          await options.action();
          finish(true);
        } catch (failure) {
          working = false;
          error.hidden = false;
          error.textContent = `${readable(failure)}. Try again, or cancel.`;
          confirm.textContent = label;
          confirm.toggleAttribute("disabled", false);
          cancel.toggleAttribute("disabled", false);
        }
      })();
    });
    dialog.showModal();
    // The safe choice takes focus unless a name must be typed first.
    (typed ?? cancel).focus();
  });
}
