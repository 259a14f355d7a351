"""Code that runs inside a worker process: a candidate's (the only process that imports a solution), or the
judge's own reference and baseline workers.

Runs in: a worker, started by walls/process.py under walls/supervisor.py, confined by walls/sandbox.py.
May touch: the worker's own process and GPU, the problem file, the solution (candidate role only), its
scratch folder and what the sandbox policy lets it write. It answers the parent through wire/ and never
imports the parent's session, lease or pool: a candidate shares this process with the code here, so
nothing here is believed by the parent on its own word.
"""
