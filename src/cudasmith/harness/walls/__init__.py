"""The walls: what starts, confines, pauses and ends the worker processes.

Runs in: the parent (process.py with environment.py and output.py, pausing.py, scratch.py, memory.py,
cputime.py: what the kernel counted of a worker's threads), and in the supervisor process between the
parent and a worker (supervisor.py), which applies the sandbox (sandbox.py, confinement.py) between fork
and exec: the policy is whole from the worker's first instruction and never narrowed later.
May touch: processes and their groups, pipes, /proc, the scratch, shared-memory and build folders it
makes, hands over and seals. It never imports a solution, and imports no worker code.
"""
