"""Bodies of CLI commands that have a module of their own (cli.py registers them)."""
