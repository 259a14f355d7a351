"""Search for kernels with a language model: prompts, answer parsing, feedback, and strategies (`ask`
is the one-shot form)."""
