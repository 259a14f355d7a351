"""Judge.submit: candidates given one at a time, as source text or as files, each a Future of its verdict,
`in_flight` judged at once; first without workers (a session that records what it judged), then a real
session on the CPU."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from cudasmith.errors import UsageError
from cudasmith.harness.session import Judge
from cudasmith.harness.stream import Submissions, solution_file
from cudasmith.harness.wire.status import Status

from conftest import PROBLEMS, SOLUTIONS


class Recorded:
    """What Submissions needs of a session: `in_flight` and a thread-safe `judge`; while `held`, each
    candidate waits, so that how many are judged at once shows."""

    def __init__(self, in_flight: int) -> None:
        self.in_flight = in_flight
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.at_once = 0
        self.most_at_once = 0
        self.texts: list[str] = []

    def judge(self, solution: Path) -> SimpleNamespace:
        with self.lock:
            self.at_once += 1
            self.most_at_once = max(self.most_at_once, self.at_once)
        assert self.released.wait(30)
        with self.lock:
            self.at_once -= 1
            self.texts.append(Path(solution).read_text())
        return SimpleNamespace(solution=str(solution))


def test_text_is_written_to_a_file_of_its_own_and_files_are_judged_where_they_are(tmp_path: Path) -> None:
    session = Recorded(in_flight=2)
    submissions = Submissions(session)  # type: ignore[arg-type]
    given = tmp_path / "given.py"
    given.write_text("# a file\n")
    futures = [submissions.submit(f"# text {i}\nclass ModelNew: pass\n") for i in range(5)]
    futures.append(submissions.submit(given))
    futures.append(submissions.submit(str(given)))
    session.released.set()
    solutions = [future.result(timeout=30).solution for future in futures]
    submissions.close()
    assert solutions[-2:] == [str(given), str(given)]
    written = [Path(path) for path in solutions[:5]]
    assert len(set(written)) == 5 and not any(path.exists() for path in written), "removed on close"
    assert sorted(session.texts[:7]) == sorted(
        [f"# text {i}\nclass ModelNew: pass\n" for i in range(5)] + ["# a file\n"] * 2
    )
    assert session.most_at_once <= 2


def test_a_missing_solution_file_is_an_error_at_once_and_cancel_drops_what_waits() -> None:
    with pytest.raises(UsageError, match="solution file not found"):
        solution_file("no_such_solution.py")
    with pytest.raises(UsageError, match="solution file not found"):
        solution_file(Path("no_such_solution"))
    assert solution_file("class ModelNew: pass") is None, "one line that is no file is source text"
    session = Recorded(in_flight=1)
    submissions = Submissions(session)  # type: ignore[arg-type]
    first, second = submissions.submit("# one\n"), submissions.submit("# two\n")
    submissions.cancel()
    session.released.set()
    assert first.result(timeout=30) is not None and second.cancelled()
    submissions.close()


@pytest.mark.slow
def test_a_cpu_session_judges_submitted_text_and_files() -> None:
    honest = (SOLUTIONS / "optimize" / "add_fast.py").read_text()
    with Judge(
        problem=PROBLEMS / "add_small.py", device="cpu", timing=False, seeds_per_config=1, in_flight=2
    ) as judge:
        futures = [
            judge.submit(honest),
            judge.submit(SOLUTIONS / "optimize" / "add_wrong.py"),
            judge.submit("class ModelNew(:\n"),
        ]
        verdicts = [future.result(timeout=300) for future in futures]
    assert [v.status for v in verdicts] == [Status.CORRECT, Status.INCORRECT, Status.COMPILE_ERROR]
    assert verdicts[1].solution.endswith("add_wrong.py")
