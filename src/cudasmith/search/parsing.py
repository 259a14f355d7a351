"""A solution file from what a model actually answers: several code blocks, CUDA and Python apart,
missing fences, prose around the code, answers cut off, thinking left in, and SEARCH/REPLACE edits
against a parent. Failing to find a solution is an answer with a reason, never an exception.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from cudasmith.search.edits import EDIT_MARKER, apply_edits, find_edits

PYTHON_LANGUAGES = {"python", "py", "python3", "py3"}
SOURCE_LANGUAGES = {"cuda", "cu", "cuh", "cpp", "c++", "cxx", "cc", "c", "h", "hpp", "hip"}
# Calls whose source argument a separate code block may fill in: function name → keyword of the source.
COMPILE_CALLS = {"compile_cuda": "source", "compile_c": "source", "load_inline": "cuda_sources"}
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
THINKING = re.compile(r"<think(?:ing)?>.*?(</think(?:ing)?>|\Z)", re.DOTALL)
MODEL_NEW = re.compile(r"^\s*class\s+ModelNew\b|^\s*ModelNew\s*=", re.MULTILINE)
PYTHON_START = re.compile(r"^(import |from \w|class |def |@|[A-Za-z_]\w*\s*=|\"\"\"|r\"\"\"|#)")


@dataclass
class CodeBlock:
    """One fenced block: its language tag (lowercase, may be empty), its code, and whether it was closed."""

    language: str
    code: str
    closed: bool

    @property
    def is_python(self) -> bool:
        if self.language in PYTHON_LANGUAGES:
            return True
        return not self.language and bool(
            MODEL_NEW.search(self.code) or re.search(r"^(import|from) ", self.code, re.M)
        )

    @property
    def is_source(self) -> bool:
        return self.language in SOURCE_LANGUAGES or (not self.language and not self.is_python)


@dataclass
class ParsedAnswer:
    """The solution file found in an answer, or None with the reason; `kind` says how it was found."""

    source: str | None
    reason: str
    kind: str = "none"
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.source is not None


def code_blocks(text: str) -> list[CodeBlock]:
    """The fenced blocks of a Markdown answer, in order; an unclosed last block runs to the end."""
    blocks: list[CodeBlock] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, language = opening.group(1), opening.group(2).lower()
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = next((j for j in range(index + 1, len(lines)) if closing.match(lines[j])), None)
        body = lines[index + 1 : end if end is not None else len(lines)]
        blocks.append(CodeBlock(language, "\n".join(body).strip("\n") + "\n", end is not None))
        index = (end if end is not None else len(lines)) + 1
    return blocks


def _syntax_error(code: str) -> str | None:
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})"
    return None


def _unfenced_python(text: str) -> str | None:
    """The longest stretch of the text that parses as Python and defines ModelNew, prose cut away."""
    lines = text.splitlines()
    target = next((i for i, line in enumerate(lines) if MODEL_NEW.match(line)), None)
    if target is None:
        return None
    # Where the code may begin: its first import, its first line that looks like Python, the class itself.
    first_import = next((i for i in range(target) if re.match(r"(import|from) ", lines[i])), None)
    first_python = next((i for i in range(target) if PYTHON_START.match(lines[i])), None)
    starts = sorted({i for i in (first_import, first_python, target) if i is not None})
    for start in starts:
        for end in range(len(lines), target, -1):
            code = "\n".join(lines[start:end]).strip("\n") + "\n"
            if MODEL_NEW.search(code) and _syntax_error(code) is None:
                return code
    return None


def _undefined_sources(tree: ast.Module) -> list[tuple[str, str | None]]:
    """(name, kernel name) for each source argument of a compile call that the module never defines."""
    defined = {
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
    missing: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if function not in COMPILE_CALLS:
            continue
        keyword = next((k.value for k in node.keywords if k.arg == COMPILE_CALLS[function]), None)
        source = node.args[0] if function != "load_inline" and node.args else keyword
        names = source.elts if isinstance(source, (ast.List, ast.Tuple)) else [source]
        kernel = node.args[1] if len(node.args) > 1 else None
        kernel_name = (
            kernel.value if isinstance(kernel, ast.Constant) and isinstance(kernel.value, str) else None
        )
        for name in names:
            if (
                isinstance(name, ast.Name)
                and name.id not in defined
                and (name.id, kernel_name) not in missing
            ):
                missing.append((name.id, kernel_name))
    return missing


def _string_literal(code: str) -> str:
    if '"""' not in code and not code.endswith("\\"):
        return f'r"""\n{code}"""'
    return repr(code)


def _bind_sources(code: str, sources: list[CodeBlock], notes: list[str]) -> str:
    """Define the kernel-source variables the Python code uses but never defines, from the other blocks."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    unused = list(sources)
    assignments = []
    for name, kernel in _undefined_sources(tree):
        if not unused:
            break
        pattern = re.compile(rf"\b{re.escape(kernel.split('<')[0])}\b") if kernel else None
        block = next((b for b in unused if pattern and pattern.search(b.code)), unused[0])
        unused.remove(block)
        assignments.append(f"{name} = {_string_literal(block.code)}\n")
        notes.append(f"took {name} from the {block.language or 'untagged'} block beside the Python code")
    if not assignments:
        return code
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    lines = code.splitlines(keepends=True)
    at = imports[-1].end_lineno if imports else 0
    return "".join(lines[:at]) + "\n" + "\n".join(assignments) + "\n" + "".join(lines[at:])


def _cut_off(finish_reason: str | None) -> str:
    return " (the answer was cut off: the model hit its token limit)" if finish_reason == "length" else ""


def parse_answer(text: str, parent: str | None = None, finish_reason: str | None = None) -> ParsedAnswer:
    """The solution file in a model's answer, as a whole file or as edits of `parent`."""
    text = text.replace("\r\n", "\n")
    if re.search(r"<think(?:ing)?>", text) and not re.search(r"</think(?:ing)?>", text):
        return ParsedAnswer(None, "the answer ends inside the model's thinking" + _cut_off(finish_reason))
    text = THINKING.sub("", text)
    if not text.strip():
        return ParsedAnswer(None, "the answer is empty" + _cut_off(finish_reason))
    if EDIT_MARKER.search(text):
        if parent is None:
            return ParsedAnswer(
                None, "the answer holds SEARCH/REPLACE edits but there is no parent to apply them to"
            )
        edits = find_edits(text)
        if not edits:
            return ParsedAnswer(None, "the SEARCH/REPLACE edits are incomplete" + _cut_off(finish_reason))
        source, problem = apply_edits(parent, edits)
        if source is None:
            return ParsedAnswer(None, problem)
        error = _syntax_error(source)
        if error:
            return ParsedAnswer(None, f"after the edits the file does not parse: {error}")
        return ParsedAnswer(
            source, f"{len(edits)} edits applied to the parent", "edits", [problem] if problem else []
        )
    blocks = code_blocks(text)
    python = [b for b in blocks if b.is_python and MODEL_NEW.search(b.code)]
    notes: list[str] = []
    if python:
        complete = [b for b in python if b.closed]
        chosen = (complete or python)[-1]
        if len(python) > 1:
            notes.append(f"{len(python)} blocks define ModelNew; the last complete one was taken")
        code = _bind_sources(chosen.code, [b for b in blocks if b.is_source and not b.is_python], notes)
        error = _syntax_error(code)
        if error:
            unclosed = "" if chosen.closed else "the code block is not closed and "
            return ParsedAnswer(
                None, f"{unclosed}the code does not parse: {error}{_cut_off(finish_reason)}", notes=notes
            )
        return ParsedAnswer(code, "a complete solution file", "file", notes)
    if blocks and not MODEL_NEW.search(text):
        languages = ", ".join(sorted({b.language or "untagged" for b in blocks}))
        return ParsedAnswer(
            None, f"no code defines class ModelNew (blocks: {languages}){_cut_off(finish_reason)}"
        )
    unfenced = _unfenced_python(text)
    if unfenced is not None:
        code = _bind_sources(unfenced, [b for b in blocks if b.is_source], notes)
        return ParsedAnswer(
            code, "a solution file without code fences", "file", ["the code had no fences", *notes]
        )
    if MODEL_NEW.search(text):
        return ParsedAnswer(None, f"the code that defines ModelNew does not parse{_cut_off(finish_reason)}")
    return ParsedAnswer(None, f"the answer holds no code{_cut_off(finish_reason)}")
