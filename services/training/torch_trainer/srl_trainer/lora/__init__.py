"""LoRA adapters, split as PEFT splits a tuner: `config` (settings and their contract defaults),
`adapter` (an adapter's weights in memory), `attach` (onto a loaded base model, with the rules of a
job's LoRA), `peft_files` and `gguf_files` (the two file formats), `fit` (whether an adapter made
elsewhere fits a base model, from its GGUF header alone)."""
