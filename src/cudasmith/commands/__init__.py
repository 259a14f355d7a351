"""The bodies of the `cudasmith` commands, a module per command (tasks.py: `tasks` and `show`), and
what they share: options.py spells every option once, judging.py bundles the judging flags into
EvalOptions, common.py holds errors, devices and problems. cli.py registers them."""
