// Form fields the train forms share: a numeric input and reading it with a message that names the
// field and what it accepts.

/** An error about one input (the form focuses it). */
export class FieldError extends Error {
  constructor(
    readonly input: HTMLInputElement,
    message: string,
  ) {
    super(message);
  }
}

export function numberField(id: string, placeholder: string): HTMLInputElement {
  const input = document.createElement("input");
  input.id = id;
  input.name = id;
  input.placeholder = placeholder;
  input.inputMode = "decimal";
  input.autocomplete = "off";
  return input;
}

export function readNumber(input: HTMLInputElement, label: string, rules: { integer?: boolean; min?: number; max?: number }): number {
  const value = Number(input.value.trim());
  const kind = rules.integer ? "a whole number" : "a number";
  const range = rules.min !== undefined && rules.max !== undefined ? ` from ${rules.min} to ${rules.max}` : rules.min !== undefined ? ` of at least ${rules.min}` : "";
  const ok = input.value.trim() !== "" && Number.isFinite(value) && (!rules.integer || Number.isInteger(value)) && (rules.min === undefined || value >= rules.min) && (rules.max === undefined || value <= rules.max);
  if (!ok) throw new FieldError(input, `${label} must be ${kind}${range} (got "${input.value.trim()}").`);
  return value;
}
