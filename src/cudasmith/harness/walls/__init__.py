"""The walls: what starts, confines, pauses and ends the worker processes.

Runs in: the parent (process.py, pausing.py, scratch.py, memory.py), and in the supervisor process between
the parent and a worker (supervisor.py), which applies the sandbox (sandbox.py, confinement.py) between
fork and exec. sandbox.narrow also runs inside a worker, to narrow its own policy once it knows its
solution.
May touch: processes and their groups, pipes, /proc, the scratch and build folders it makes and seals. It
never imports a solution, and imports no worker code.
"""
