// The ChatML chat template written into every tiny model (tokenizer.chat_template), Qwen-style.
// `content` may be a string, a list of parts (strings or {type: "text", text}) or null/missing, as
// OpenAI-style requests send; non-text parts are skipped. Written for @huggingface/jinja and
// llama.cpp's template engine alike (only `is string`, `is none`, `is iterable`, `is mapping`).

// Renders a message's `content`: a string, or the text of a list of parts.
const RENDER_CONTENT_MACRO = [
  "{%- macro render_content(content) -%}",
  "{%- if content is string -%}",
  "{{- content -}}",
  "{%- elif content is iterable and content is not mapping -%}",
  "{%- for part in content -%}",
  "{%- if part is string -%}{{- part -}}",
  "{%- elif part is mapping and part['type'] == 'text' -%}{{- part['text'] -}}",
  "{%- endif -%}",
  "{%- endfor -%}",
  "{%- endif -%}",
  "{%- endmacro -%}",
];

export const CHATML_TEMPLATE = [
  ...RENDER_CONTENT_MACRO,
  "{%- for message in messages -%}",
  "{%- set content = message['content'] if message['content'] is defined else none -%}",
  "{{- '<|im_start|>' + message['role'] + '\\n' + render_content(content) + '<|im_end|>' + '\\n' -}}",
  "{%- endfor -%}",
  "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}",
].join("\n");

// The same ChatML with Hermes-style tool use (the `tiny-tools` built-in): offered tools are listed
// in a system block inside <tools></tools>, assistant tool calls render as
// <tool_call>{"name": ..., "arguments": ...}</tool_call>, and tool results come back as
// <tool_response> blocks in a user turn.
export const CHATML_TOOLS_TEMPLATE = [
  ...RENDER_CONTENT_MACRO,
  "{%- set has_tools = tools is defined and tools is not none and tools | length > 0 -%}",
  "{%- if has_tools -%}",
  "{{- '<|im_start|>system\\n' -}}",
  "{%- if messages | length > 0 and messages[0]['role'] == 'system' -%}{{- render_content(messages[0]['content']) + '\\n\\n' -}}{%- endif -%}",
  "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n<tools>' -}}",
  "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}",
  "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags.<|im_end|>\\n' -}}",
  "{%- endif -%}",
  "{%- for message in messages -%}",
  "{%- set content = message['content'] if message['content'] is defined else none -%}",
  "{%- if has_tools and loop.first and message['role'] == 'system' -%}",
  "{%- elif message['role'] == 'tool' -%}",
  "{{- '<|im_start|>user\\n<tool_response>\\n' + render_content(content) + '\\n</tool_response><|im_end|>\\n' -}}",
  "{%- else -%}",
  "{{- '<|im_start|>' + message['role'] + '\\n' + render_content(content) -}}",
  "{%- if message['tool_calls'] is defined and message['tool_calls'] is not none -%}",
  "{%- for call in message['tool_calls'] -%}",
  "{%- set fn = call['function'] if call['function'] is defined else call -%}",
  "{%- set args = fn['arguments'] if fn['arguments'] is defined else '{}' -%}",
  "{{- '\\n<tool_call>\\n{\"name\": \"' + fn['name'] + '\", \"arguments\": ' + (args if args is string else (args | tojson)) + '}\\n</tool_call>' -}}",
  "{%- endfor -%}",
  "{%- endif -%}",
  "{{- '<|im_end|>\\n' -}}",
  "{%- endif -%}",
  "{%- endfor -%}",
  "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}",
].join("\n");
