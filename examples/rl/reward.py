"""A batch reward function for RL on kernels, of the shape TRL's GRPOTrainer takes: the model's completions
in, one float each out, scored by a running `cudasmith serve` (all of a batch queued at once, judged K at a
time on each GPU of the server).

    from reward import kernel_reward
    trainer = GRPOTrainer(model=..., reward_funcs=kernel_reward, train_dataset=dataset, ...)

Each completion's code is taken from it as `cudasmith optimize` takes a model's answer (fences or none,
CUDA apart from the Python, thinking left in); an answer with no usable solution scores 0, as does any
verdict but correct (a caught cheat earns nothing). The reward is `cudasmith.reward`, the one `cudasmith
export` writes. The dataset's `task` column (a built-in task's name) says what each prompt asked for;
without it, CUDASMITH_TASK does. CUDASMITH_SERVER and CUDASMITH_TOKEN say where the server is.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import cudasmith
from cudasmith.search.parsing import parse_answer


def completion_text(completion: Any) -> str:
    """A completion as text: TRL gives a string, or (conversational datasets) a list of messages."""
    if isinstance(completion, str):
        return completion
    return "".join(
        message.get("content") or ""
        for message in completion
        if message.get("role", "assistant") == "assistant"
    )


def kernel_reward(completions: list[Any], task: list[str] | None = None, **kwargs: Any) -> list[float]:
    """One reward per completion: 0 for an answer without a solution or a verdict other than correct, 0.3
    plus the speedup over eager PyTorch for a correct kernel."""
    tasks = task or [os.environ.get("CUDASMITH_TASK", "level1/softmax")] * len(completions)
    options = json.loads(os.environ.get("CUDASMITH_OPTIONS") or "{}")
    client = cudasmith.Client(os.environ.get("CUDASMITH_SERVER", "http://127.0.0.1:8765"))
    rewards = [0.0] * len(completions)
    by_task: dict[str, list[tuple[int, str]]] = {}
    for index, (completion, name) in enumerate(zip(completions, tasks, strict=True)):
        parsed = parse_answer(completion_text(completion))
        if parsed.source is not None:
            by_task.setdefault(name, []).append((index, parsed.source))
    ids: dict[int, int] = {}
    for name, found in by_task.items():  # one request per task, every candidate of it at once
        submitted = client.submit_many([source for _, source in found], task=name, options=options)
        ids.update((index, id) for (index, _), id in zip(found, submitted, strict=True))
    for index, id in ids.items():
        submission = client.status(id)
        while not submission.state.finished:
            submission = client.status(id, wait_s=60)
        if submission.reward is None:  # the judge itself failed: no reward to give, said on stderr
            print(f"cudasmith: submission {id}: {submission.error}", file=sys.stderr)
            continue
        rewards[index] = submission.reward
    return rewards
