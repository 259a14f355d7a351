"""The judge: isolated workers, reference outputs out of the candidate's reach, comparison, timing, verdicts.

The folder says the process:
- the modules here run in the parent: the session (session.py), the timing lease (lease.py), the pool of
  workers started ahead (pool.py), the correctness cascade (correctness.py), timing (timed.py), baselines,
  the verdict and its assembly;
- workers/ runs inside worker processes (the candidate's, the judge's reference and baseline workers);
- walls/ starts, confines, pauses and ends them;
- wire/ is what crosses between them.
docs/DESIGN.md draws the map.
"""
