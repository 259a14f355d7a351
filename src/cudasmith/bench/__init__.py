"""Benchmarks: a model, or a folder of existing solutions, over a set of tasks, into the run store."""
