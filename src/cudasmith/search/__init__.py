"""Search for kernels with language models: prompts, answer parsing, feedback, the strategies (`fsr`,
`evolve`), the asynchronous driver on the run store, and `optimize` (`ask` is its one-shot form)."""
