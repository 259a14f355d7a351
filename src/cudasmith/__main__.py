"""`python -m cudasmith` is the `cudasmith` command."""

from cudasmith.cli import main

main()
