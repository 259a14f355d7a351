"""Novelty before the GPU: a candidate that repeats one already seen, exactly or nearly, is not judged.

Code is compared as tokens with comments dropped, so layout and comment changes do not make code new.
Near-duplicates are found with difflib's matcher over token lists (the cheap upper bounds first).
"""

from __future__ import annotations

import difflib
import hashlib
import re

# Comments that change nothing: C and C++ comments, and Python comment lines (not preprocessor lines).
COMMENTS = re.compile(
    r"//[^\n]*|/\*.*?\*/|^\s*#(?!\s*(?:include|define|undef|pragma|if|ifdef|ifndef|elif|else|endif|line)\b)[^\n]*",
    re.DOTALL | re.MULTILINE,
)
TOKEN = re.compile(r"\w+|[^\w\s]")
# Candidates at least this similar (difflib ratio over tokens) to one already seen are near-duplicates.
NEAR_DUPLICATE_RATIO = 0.99


def tokens(source: str) -> list[str]:
    """The code's tokens, comments and layout dropped."""
    return TOKEN.findall(COMMENTS.sub(" ", source))


class NoveltyFilter:
    """Remembers the code seen in a run and says whether a new candidate repeats it."""

    def __init__(self, threshold: float = NEAR_DUPLICATE_RATIO) -> None:
        self.threshold = threshold
        self._by_hash: dict[str, int] = {}
        self._seen: list[tuple[int, list[str]]] = []

    def _key(self, code: list[str]) -> str:
        return hashlib.sha256(" ".join(code).encode()).hexdigest()

    def why_not_novel(self, source: str, near: bool = True) -> str | None:
        """Why the code is not new (a duplicate of candidate #k), or None; `near` checks near-duplicates too."""
        code = tokens(source)
        exact = self._by_hash.get(self._key(code))
        if exact is not None:
            return f"a duplicate of candidate {exact}"
        if not near or self.threshold >= 1.0:
            return None
        for candidate_id, seen in self._seen:
            matcher = difflib.SequenceMatcher(None, seen, code, autojunk=False)
            if (
                matcher.real_quick_ratio() >= self.threshold
                and matcher.quick_ratio() >= self.threshold
                and (ratio := matcher.ratio()) >= self.threshold
            ):
                return f"a near-duplicate of candidate {candidate_id} ({ratio:.1%} of its tokens alike)"
        return None

    def add(self, candidate_id: int, source: str) -> None:
        """Remember a candidate's code."""
        code = tokens(source)
        self._by_hash.setdefault(self._key(code), candidate_id)
        self._seen.append((candidate_id, code))
