"""Tracebacks a solution's author can use: the frames of their own file and the exception, not the judge's.

A syntax error or a kernel that does not compile used to come with twenty lines of the worker, the
importer and the runtime; the author needs the line of their file that failed and the error itself.
"""

from __future__ import annotations

import traceback
from pathlib import Path


def _same_file(filename: str, solution: Path) -> bool:
    try:
        return Path(filename).resolve() == solution.resolve()
    except OSError:
        return False


def solution_traceback(exc: BaseException, solution: Path | None) -> str:
    """The traceback of `exc` keeping only frames in `solution` (every frame when there is none), with
    the exception line, and chained exceptions likewise. A SyntaxError keeps its file, line and caret."""
    formatted = traceback.TracebackException.from_exception(exc)
    if solution is not None:
        seen: set[int] = set()
        pending = [formatted]
        while pending:
            part = pending.pop()
            if id(part) in seen:
                continue
            seen.add(id(part))
            part.stack = traceback.StackSummary.from_list(
                [frame for frame in part.stack if _same_file(frame.filename, solution)]
            )
            pending += [chained for chained in (part.__cause__, part.__context__) if chained is not None]
    return "".join(formatted.format())
