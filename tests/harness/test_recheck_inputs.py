"""A timed call's re-check: the reference worker makes the call's inputs from a kept copy of its input set,
bit for bit the tensors a fresh make would give, and the comparison asks only whether the outputs match."""

from __future__ import annotations

import pytest
import torch

from cudasmith.harness.wire.messages import InputSpec, WorkerSetup
from cudasmith.harness.workers import reference
from cudasmith.harness.workers.calls import spec_inputs
from cudasmith.harness.workers.check import compare_outputs
from cudasmith.tasks.problem import load_module

from conftest import PROBLEMS

PROBLEM = PROBLEMS / "add_small.py"


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> reference.ReferenceWorker:
    # The worker's process would stop others reading its memory; this test's process is not the worker.
    monkeypatch.setattr(reference, "_keep_memory_private", lambda: None)
    made = reference.ReferenceWorker(WorkerSetup("reference", str(PROBLEM), "cpu"))
    made.load()
    return made


def test_a_timed_calls_inputs_from_the_kept_set_are_those_made_afresh(
    worker: reference.ReferenceWorker,
) -> None:
    problem = load_module(PROBLEM, "problem_under_test")
    config = {"n": 65_537}
    for drawn in (False, True):
        base = InputSpec(0, config, init_seed=11, input_seed=22, drawn=drawn)
        for perturb in (5, 6, 5):  # the same perturbation again: the kept set was not changed by the others
            spec = InputSpec(0, config, 11, 22, drawn, perturb)
            got, fresh = worker._inputs(spec), spec_inputs(problem, spec, "cpu")
            assert all(torch.equal(a, b) for a, b in zip(got, fresh, strict=True))
            assert not torch.equal(got[0], spec_inputs(problem, base, "cpu")[0]), "the copy was perturbed"
        kept = worker.timing_sets[(0, 22, drawn)]
        assert all(torch.equal(a, b) for a, b in zip(kept, spec_inputs(problem, base, "cpu"), strict=True))
    assert len(worker.timing_sets) == 2 and worker.timing_sets_bytes == 2 * 2 * 65_537 * 4


def test_a_recheck_asks_only_whether_the_outputs_match(worker: reference.ReferenceWorker) -> None:
    spec = InputSpec(0, {"n": 65_537}, 11, 22, perturb=9)
    made = worker._reference(spec, keep=False)
    assert spec.key not in worker.cache
    outputs = [made.outputs[0].clone()]
    wrong = [made.outputs[0] + 1.0]
    for kernelbench, expected in ((True, True), (False, None)):
        matched = compare_outputs(outputs, made.outputs, made.outputs64, {}, made.scale, kernelbench)
        assert matched.ok and matched.kernelbench is expected
        missed = compare_outputs(wrong, made.outputs, made.outputs64, {}, made.scale, kernelbench)
        assert not missed.ok and missed.kernelbench is (False if kernelbench else None)
