"""What the judge said about a candidate, written for the model that will improve it: the verdict,
compiler errors trimmed to what matters, where the output was wrong, and time per config against the
baseline.
"""

from __future__ import annotations

import json
import re

from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.jsontypes import JsonObject
from cudasmith.tasks.problem import Config

# Compiler output and tracebacks are cut to this many lines, and any one block to this many characters.
MAX_LOG_LINES = 30
MAX_BLOCK_CHARS = 3000
# Lines kept after each compiler error line: the offending source line and the caret under it.
ERROR_CONTEXT_LINES = 2
# Traceback frames from these places are the judge's or a library's, not the candidate's.
FOREIGN_FRAMES = re.compile(r'File "(<frozen [^>]*>|[^"]*/(cudasmith|torch|importlib)/[^"]*)"')
COMPILER_ERROR = re.compile(r"\berror\b", re.IGNORECASE)


def _cap(lines: list[str]) -> str:
    text = "\n".join(lines[:MAX_LOG_LINES])
    if len(lines) > MAX_LOG_LINES:
        text += f"\n… ({len(lines) - MAX_LOG_LINES} more lines)"
    return text if len(text) <= MAX_BLOCK_CHARS else text[:MAX_BLOCK_CHARS] + "\n… (cut)"


def trim_traceback(text: str) -> str:
    """A traceback without the judge's and libraries' frames: the candidate's frames and the error."""
    kept: list[str] = []
    skipping = False
    for line in text.strip().splitlines():
        if line.startswith("  File "):
            skipping = bool(FOREIGN_FRAMES.search(line))
        elif not line.startswith(" "):
            skipping = False
        if not skipping and not set(line.strip()) <= set("^~ "):
            kept.append(line)
    return _cap(kept)


def trim_compiler_output(text: str) -> str:
    """The error lines of compiler output, each with the source line and caret after it."""
    lines = text.strip().splitlines()
    wanted: list[int] = []
    for index, line in enumerate(lines):
        if COMPILER_ERROR.search(line) and not line.startswith("  File "):
            wanted += range(index, min(index + 1 + ERROR_CONTEXT_LINES, len(lines)))
    if not wanted:
        return trim_traceback(text)
    return _cap([lines[i] for i in dict.fromkeys(wanted)])


def format_ms(value: float | None) -> str:
    """A time in µs below a millisecond, else in ms."""
    if value is None:
        return "–"
    return f"{value * 1e3:.1f} µs" if value < 1 else f"{value:.3f} ms"


def _config_text(config: Config | str) -> str:
    return config if isinstance(config, str) else (json.dumps(config) if config else "(default)")


def _mismatch_text(result: ConfigResult) -> str:
    report = result.mismatch
    parts = [result.reason]
    if report is None:
        return parts[0]
    if report.rel_err is not None:
        parts.append(
            f"rel_err {report.rel_err:.3g} (allowed {report.rel_err_allowed or 0:.3g}; "
            f"the reference's own {report.reference_own_rel_err or 0:.3g}), "
            f"max abs err {report.max_abs_err or 0:.3g}"
        )
    for key in ("got_nan", "expected_nan", "got_inf", "expected_inf"):
        if getattr(report, key) is not None:
            parts.append(f"{key.replace('_', ' ')}: {getattr(report, key)}")
    firsts = [f for f in report.first if f.expected is not None and f.got is not None]
    if firsts:
        shown = "; ".join(f"at {f.index} expected {f.expected:.6g}, got {f.got:.6g}" for f in firsts)
        parts.append(f"first wrong values: {shown}")
    if (worst := report.worst) is not None and worst.expected is not None and worst.got is not None:
        parts.append(
            f"worst: expected {worst.expected:.6g}, got {worst.got:.6g} (allowed error {worst.allowed or 0:.3g})"
        )
    return "\n  ".join(parts)


def _config_table(verdict: Verdict) -> list[str]:
    lines = [
        f"| # | config | status | rel err | time | {verdict.baseline} | speedup |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in verdict.configs:
        lines.append(
            f"| {result.index} | {_config_text(result.config)} | {result.status} | "
            f"{'–' if result.rel_err is None else f'{result.rel_err:.1e}'} | {format_ms(result.time_ms)} | "
            f"{format_ms(result.baseline_ms)} | {'–' if result.speedup is None else f'{result.speedup:.2f}x'} |"
        )
    return lines


def verdict_feedback(verdict: Verdict) -> str:
    """The verdict as Markdown for a prompt."""
    lines = [f"Verdict: **{verdict.status}**: {verdict.reason}"]
    if verdict.speedup:
        lines.append(
            f"Speedup over {verdict.baseline}: {verdict.speedup:.2f}x (geometric mean over configs)."
        )
    traceback = verdict.artifacts.get("traceback", "")
    if verdict.status == "compile_error" and traceback:
        lines += ["", "Compiler output (trimmed):", "```", trim_compiler_output(traceback), "```"]
    elif verdict.status in ("runtime_error", "rejected") and traceback:
        lines += ["", "Traceback (the judge's frames removed):", "```", trim_traceback(traceback), "```"]
    wrong = [r for r in verdict.configs if r.status == "incorrect"]
    for result in wrong:
        lines += [
            "",
            f"Mismatch on config {result.index} {_config_text(result.config)}:",
            f"  {_mismatch_text(result)}",
        ]
    if verdict.configs:
        lines += ["", "Per config:", *_config_table(verdict)]
    for skipped in verdict.skipped_configs:
        lines.append(f"(config {skipped.index} not run: {skipped.reason})")
    for note in verdict.notes:
        lines.append(f"Note: {note}")
    for stream in ("stdout", "stderr"):
        if verdict.artifacts.get(stream, "").strip():
            lines += [
                "",
                f"The solution printed on {stream} (last lines):",
                "```",
                _cap(verdict.artifacts[stream].strip().splitlines()[-MAX_LOG_LINES:]),
                "```",
            ]
    return "\n".join(lines)


def verdict_from_dict(data: JsonObject) -> Verdict:
    """A Verdict from its JSON form (what `cudasmith eval --json` prints)."""
    return Verdict.from_dict(data)
