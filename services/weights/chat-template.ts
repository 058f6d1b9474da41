// The ChatML chat template written into every tiny model (tokenizer.chat_template), Qwen-style.
// `content` may be a string, a list of parts (strings or {type: "text", text}) or null/missing, as
// OpenAI-style requests send; non-text parts are skipped. Written for @huggingface/jinja and
// llama.cpp's template engine alike (only `is string`, `is none`, `is iterable`, `is mapping`).
export const CHATML_TEMPLATE = [
  "{%- for message in messages -%}",
  "{{- '<|im_start|>' + message['role'] + '\\n' -}}",
  "{%- set content = message['content'] if message['content'] is defined else none -%}",
  "{%- if content is string -%}",
  "{{- content -}}",
  "{%- elif content is iterable and content is not mapping -%}",
  "{%- for part in content -%}",
  "{%- if part is string -%}{{- part -}}",
  "{%- elif part is mapping and part['type'] == 'text' -%}{{- part['text'] -}}",
  "{%- endif -%}",
  "{%- endfor -%}",
  "{%- endif -%}",
  "{{- '<|im_end|>' + '\\n' -}}",
  "{%- endfor -%}",
  "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}",
].join("\n");
