"""Bodies of the `cudasmith` commands that have a module of their own; cli.py registers them."""
