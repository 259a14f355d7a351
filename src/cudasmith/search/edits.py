"""SEARCH/REPLACE edits of a parent solution, as models write them:

    <<<<<<< SEARCH
    lines of the parent
    =======
    the lines that replace them
    >>>>>>> REPLACE

A SEARCH part is found exactly, else line by line ignoring trailing whitespace, else ignoring
indentation (the replacement is then re-indented by the same amount).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EDIT_MARKER = re.compile(r"^\s*<{5,9} ?SEARCH\b", re.MULTILINE)
EDIT = re.compile(
    r"^\s*<{5,9} ?SEARCH[^\n]*\n(?P<search>.*?)^\s*={5,9}\s*\n(?P<replace>.*?)^\s*>{5,9} ?REPLACE[^\n]*$",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Edit:
    """Replace `search` with `replace`."""

    search: str
    replace: str


def find_edits(text: str) -> list[Edit]:
    """Every complete edit in the text, in order."""
    return [Edit(m.group("search"), m.group("replace")) for m in EDIT.finditer(text)]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _find(lines: list[str], wanted: list[str], ignore_indent: bool) -> int | None:
    """The first index where `wanted` matches `lines`, ignoring trailing (and, if asked, leading) whitespace."""
    normalise = str.strip if ignore_indent else str.rstrip
    target = [normalise(line) for line in wanted]
    for start in range(len(lines) - len(wanted) + 1):
        if all(normalise(lines[start + k]) == target[k] for k in range(len(wanted))):
            return start
    return None


def _reindent(lines: list[str], have: str, had: str) -> list[str]:
    """Lines written at indent `had` moved to indent `have`."""
    if len(have) >= len(had):
        return [have[len(had) :] + line if line.strip() else line for line in lines]
    cut = len(had) - len(have)
    return [line[cut:] if line[:cut].isspace() else line.lstrip() for line in lines]


def apply_edit(source: str, edit: Edit) -> tuple[str | None, str]:
    """The source with one edit applied, and a note; None and the reason when the SEARCH part is not found."""
    if not edit.search.strip():
        return None, "a SEARCH part is empty"
    count = source.count(edit.search)
    if count:
        note = f"its SEARCH part matches {count} places; the first was replaced" if count > 1 else ""
        return source.replace(edit.search, edit.replace, 1), note
    lines = source.splitlines()
    wanted = edit.search.strip("\n").splitlines()
    replacement = edit.replace.strip("\n").splitlines() if edit.replace.strip() else []
    note = "matched when trailing whitespace was ignored"
    start = _find(lines, wanted, ignore_indent=False)
    if start is None:
        start = _find(lines, wanted, ignore_indent=True)
        if start is None:
            return None, f"its SEARCH part is not in the parent (it begins {wanted[0].strip()[:60]!r})"
        replacement = _reindent(replacement, _indent(lines[start]), _indent(wanted[0]))
        note = "matched when indentation was ignored; the replacement was re-indented"
    new_lines = lines[:start] + replacement + lines[start + len(wanted) :]
    return "\n".join(new_lines) + ("\n" if source.endswith("\n") else ""), note


def apply_edits(source: str, edits: list[Edit]) -> tuple[str | None, str]:
    """The source with every edit applied in order, and notes; None and the reason when one fails."""
    notes = []
    for number, edit in enumerate(edits, start=1):
        result, note = apply_edit(source, edit)
        if result is None:
            return None, f"edit {number} of {len(edits)}: {note}"
        source = result
        if note:
            notes.append(f"edit {number}: {note}")
    return source, "; ".join(notes)
