"""The run store: one SQLite file (WAL mode) holding every run, so that a run survives kill -9 and
resumes with no model call and no evaluation repeated, and so that `bench`, `report` and `export` read
what `optimize` and `ask` did.

Where: `./runs/cudasmith.db` (beside the run directories), or `$CUDASMITH_STORE`, or `--store PATH`.

    with RunStore() as store:
        run = store.create_run(new_run("bench", task, problem.source_hash, device, seed))  # store.start
        candidate = store.add_candidate(run.id, "file:a.py", "file", source=text, code_hash=code_hash(text))
        store.record_verdict(candidate.id, verdict, key, candidate.code_hash, run.id)

Tables (JSON columns are TEXT holding JSON; times are ISO 8601 UTC):

- `runs`: `id` (e.g. `optimize-20260101-120000-ab12`, also its run directory's name), `kind`
  (optimize | ask | bench), `task`, `task_version` (hash of the problem's source), `problem_path`,
  `strategy` (fsr | evolve | one-shot | folder), `models` (JSON list of specs), `options` (JSON: the
  search and judging options), `device` (cuda | cpu), `device_name`, `versions` (JSON software
  versions), `harness_version`, `secret_seed` (the judge's seed for the run; never shown in prompts),
  `directory` (where candidate files are written), `status` (running | finished | stopped | failed),
  `stop_reason`, `summary` (JSON, when it ends).
- `llm_calls`: one request to a model, stored *before* it is sent: `run_id`, `key` (unique in the run;
  resume matches on it), `purpose` (propose | verify), `model`, `request` (JSON: messages, n, sampling
  settings), `meta` (JSON: round, island, operator, parent ids, candidate id for verify), `status`
  (pending | done | failed), `error`.
- `completions`: the answers of a call: `call_id`, `idx`, `text`, `finish_reason`, `model`,
  `input_tokens`, `output_tokens`, `cost_usd` (NULL when the price is unknown: never 0 for unknown),
  `latency_s`, `extra`.
- `candidates`: `run_id`, `key`, `round`, `island`, `origin` (llm | tunable | file), `operator` (first,
  repair, refine, diff, rewrite, crossover, tunable…), `parents` (JSON list of candidate ids: the
  lineage; the first is the solution its prompt refined), `completion_id` (the answer it came from),
  `source`, `code_hash`, `path` (the file judged), `parse` (JSON: how the code was found in the
  answer), `meta` (JSON: tunable values, ptxas resources, Nsight Compute profile, features),
  `verifier` (JSON: the LLM verifier's opinion), `skipped` (why it was never judged: a duplicate…),
  `verdict_id`, `verdict_cached` (1 when the verdict came from the cache), `observed` (the order in
  which the search took in its verdict).
- `verdicts`: one row per run of the judge, and the evaluation cache: `code_hash`, `task_version`,
  `device_name`, `harness_version` (a hash of the judge's own code), `judge_options` (a hash of the
  options that change verdicts), `run_id`, `status`, `speedup`, `verdict` (JSON: `Verdict.to_dict()`),
  `wall_s`. A candidate whose code, task, device, judge and options match a stored verdict reuses it.
- `baselines`: the baseline times found in each verdict: `verdict_id`, `task_version`, `device_name`,
  `config_index`, `config`, `name` (eager, compile, expert…), `time_ms`, `ci95_ms`, `sol_pct`,
  `measured_at`.
- `events`: what the search did, once per `key`: `kind` (round, migration, stop…) and `data`.

The multi-turn chain of a candidate (prompt → answer → code → verdict → next prompt) is
`RunStore.chain(candidate_id)`: follow `parents[0]`; each candidate's prompt is its completion's call's
request. The schema version is `PRAGMA user_version`; `schema.MIGRATIONS` upgrades older files.
"""

from cudasmith.store.db import DEFAULT_STORE, STORE_ENV, RunStore, default_store_path, new_run_id
from cudasmith.store.records import (
    CacheKey,
    CallRecord,
    CandidateRecord,
    CompletionRecord,
    Run,
    Turn,
    Usage,
    VerdictRecord,
    code_hash,
)
from cudasmith.store.schema import SCHEMA_VERSION

__all__ = [
    "DEFAULT_STORE",
    "SCHEMA_VERSION",
    "STORE_ENV",
    "CacheKey",
    "CallRecord",
    "CandidateRecord",
    "CompletionRecord",
    "Run",
    "RunStore",
    "Turn",
    "Usage",
    "VerdictRecord",
    "code_hash",
    "default_store_path",
    "new_run_id",
]
