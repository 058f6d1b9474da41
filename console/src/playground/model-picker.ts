// A model picker: a select of the catalog's names grouped by model, plus "Custom model name…"
// with a text field, since the API accepts more names than the lists hold (other steps, hub ids).
import { h } from "../dom.js";
import type { ModelGroup } from "./model-catalog.js";

export interface ModelPicker {
  element: HTMLElement;
  /** The name to send as `model` (the custom field's text when "custom" is chosen). */
  value(): string;
  /** What the person sees for the current choice (the option's label, or the custom name). */
  label(): string;
  /** Chooses `name`: its option when listed, else an option of its own. */
  choose(name: string): void;
  /** Replaces the options, keeping the current choice. */
  setGroups(groups: ModelGroup[]): void;
  /** The person changed the choice (not called for `choose` or `setGroups`). */
  onChange(listener: () => void): void;
  /** A disabled picker is left out of the form's checks (an empty hidden custom name). */
  setEnabled(enabled: boolean): void;
}

/** The custom choice has an empty value: no model is named "". */
const CUSTOM = "";
/** Shown (disabled) until the lists arrive when nothing was chosen yet. */
const LOADING = " loading"; // no model name starts with a space (names are trimmed)

export function modelPicker(options: { name: string; label: string; initial: string | null; loading: boolean }): ModelPicker {
  const select = h("select", { name: options.name, id: `pg-${options.name}`, class: "pg-model-select" });
  const custom = h("input", { name: `${options.name}-custom`, class: "pg-custom-model", placeholder: "wandb-artifact:///entity/project/name:step3 or a base model", "aria-label": `${options.label}: custom model name`, spellcheck: "false", autocomplete: "off" });
  const listeners: (() => void)[] = [];
  let groups: ModelGroup[] = [];
  let loading = options.loading;
  // Names chosen that no list holds (the link's, the latest chosen): still choosable.
  const linked = options.initial;
  let latest: string | null = null;

  /** `keep` null: the first listed option (nothing chosen yet). */
  const render = (keep: string | null) => {
    const parts: HTMLElement[] = groups.map((group) => h("optgroup", { label: group.label }, ...group.options.map((option) => h("option", { value: option.value }, option.label))));
    const listed = new Set(groups.flatMap((group) => group.options.map((option) => option.value)));
    const others = [...new Set([linked, latest])].filter((name): name is string => !!name && !listed.has(name));
    const otherGroup = h("optgroup", { label: "Other" }, ...others.map((name) => h("option", { value: name }, name)), h("option", { value: CUSTOM }, "Custom model name…"));
    if (loading && groups.length === 0) parts.push(h("option", { value: LOADING, disabled: "" }, "Loading models…"));
    select.replaceChildren(...parts, otherGroup);
    if (keep !== null) select.value = keep;
    if (keep === null || select.value !== keep) select.selectedIndex = 0;
    syncCustom();
  };
  const syncCustom = () => {
    custom.hidden = select.value !== CUSTOM;
    custom.required = !custom.hidden; // a hidden field must not block sending
  };

  select.addEventListener("change", () => {
    syncCustom();
    if (select.value === CUSTOM) custom.focus();
    for (const listener of listeners) listener();
  });
  custom.addEventListener("input", () => listeners.forEach((listener) => listener()));

  const picker: ModelPicker = {
    element: h("div", { class: "pg-picker" }, h("label", { for: select.id }, options.label), h("div", { class: "pg-picker-fields" }, select, custom)),
    value: () => (select.value === CUSTOM ? custom.value.trim() : select.value === LOADING ? "" : select.value),
    label: () => (select.value === CUSTOM ? custom.value.trim() : (select.selectedOptions[0]?.textContent ?? select.value)),
    choose(name) {
      if (name === "") return;
      latest = name;
      render(name);
    },
    setGroups(next) {
      groups = next;
      loading = false;
      render(select.value === LOADING ? null : select.value);
    },
    onChange: (listener) => void listeners.push(listener),
    setEnabled(enabled) {
      select.disabled = !enabled;
      custom.disabled = !enabled;
    },
  };
  if (options.initial) picker.choose(options.initial);
  else render(null);
  return picker;
}
