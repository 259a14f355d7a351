"""Races: a call's work on streams that the caller's stream does not wait for.

Runs in: the candidate's worker, on a GPU, around each call of forward (workers/forward.py). streams.py
builds the happens-before graph of the call's GPU streams from CUPTI's records (workers/recording.py) and
names work the caller's stream does not wait for by the time forward returns; returned.py launches the
end-of-forward marker on the caller's stream, the second detector: the call's GPU work that ends after
the marker starts.
May touch: what the rest of workers/ may: the worker's own process and GPU. It shares that process with
the candidate: a race it finds rejects the call, and its finding none proves nothing on its own.
"""
