"""Live adapters: AdapterCommand's LoRA adapters kept on this trainer between calls (the
command-style training API), each with its own AdamW state, several at once as named PEFT adapters
on the one loaded base model (lora/attach.py).

`command_input` reads a command's stream (the command, state files, datums), `registry` keeps the
adapters by id (which are in memory, which written to disk, least recently used out first),
`state` writes and reads an adapter's weights, moments and step as files, `optim` is the AdamW
step, `compute` the forward (and backward) over datums with tinker_losses.py, `commands` runs each
command kind.
"""
