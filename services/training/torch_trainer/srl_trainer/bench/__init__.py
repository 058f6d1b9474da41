"""The trainer's own GPU benchmark: `python -m srl_trainer.bench --shape llama-1b`.

A random-weight model of a named shape (shapes.py) is built on the device and saved as a Hugging
Face safetensors directory plus a GGUF of the same shape (model_files.py, gguf_file.py). The plain
PyTorch + PEFT loop (plain_loop.py) and the trainer through its gRPC `Train` contract
(trainer_run.py) then train the same rows, each configuration in a fresh
process so that its peak memory is its own (configs.py, processes.py, run.py), and report.py
writes the table.
Nothing here is imported by the trainer itself.
"""
