"""Measuring how long a call takes: the protocol (protocol.py), its GPU samples (cuda.py), CUPTI's records
of GPU work (activity.py) and the judge's own clocks (clock.py). Below the harness and the device's
measurements, which both time with it; it imports neither."""
