"""The judge: isolated workers, reference outputs out of the candidate's reach, comparison, timing, verdicts.

The folder says the process:
- the modules here run in the parent: the session (session.py), the timing lease (lease.py), the pool of
  workers started ahead (pool.py), the correctness cascade (correctness.py), timing (timed.py), baselines,
  the verdict and its assembly;
- witnesses/ runs in the parent too: what it measures or checks itself, outside the candidate's reach (its
  clock around timed requests, the frozen re-check of outputs, the static screen, the roofline);
- workers/ runs inside worker processes (the candidate's, the judge's reference and baseline workers;
  races/ finds a call's work on streams the caller's stream does not wait for);
- walls/ starts, confines, pauses and ends them;
- wire/ is what crosses between them.
docs/DESIGN.md draws the map.
"""
