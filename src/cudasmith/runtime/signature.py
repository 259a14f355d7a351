"""Reading a C or CUDA function's parameter list from its source, so calls need no type annotations.

`kernel(x, out, n)` should just work: pointers take tensors, `int n` takes a Python int. The parser
handles what kernels are written with (qualifiers, `__restrict__`, templates in the name, comments);
for anything it cannot type, the caller passes a ctypes or NumPy scalar and its bytes are used as is.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

_SCALAR_TYPES: dict[str, type[ctypes._SimpleCData]] = {
    "bool": ctypes.c_bool,
    "_Bool": ctypes.c_bool,
    "char": ctypes.c_int8,
    "signed char": ctypes.c_int8,
    "int8_t": ctypes.c_int8,
    "unsigned char": ctypes.c_uint8,
    "uint8_t": ctypes.c_uint8,
    "short": ctypes.c_int16,
    "short int": ctypes.c_int16,
    "int16_t": ctypes.c_int16,
    "unsigned short": ctypes.c_uint16,
    "uint16_t": ctypes.c_uint16,
    "int": ctypes.c_int32,
    "signed": ctypes.c_int32,
    "signed int": ctypes.c_int32,
    "int32_t": ctypes.c_int32,
    "unsigned": ctypes.c_uint32,
    "unsigned int": ctypes.c_uint32,
    "uint32_t": ctypes.c_uint32,
    # long is 64-bit on Linux, in host code and in CUDA device code alike.
    "long": ctypes.c_int64,
    "long int": ctypes.c_int64,
    "long long": ctypes.c_int64,
    "long long int": ctypes.c_int64,
    "int64_t": ctypes.c_int64,
    "ptrdiff_t": ctypes.c_int64,
    "ssize_t": ctypes.c_int64,
    "intptr_t": ctypes.c_int64,
    "unsigned long": ctypes.c_uint64,
    "unsigned long long": ctypes.c_uint64,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_uint64,
    "uintptr_t": ctypes.c_uint64,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
}
# 16-bit floats travel as their bit patterns; the value is converted with torch when the call is made.
HALF_TYPES = {"half": "float16", "__half": "float16", "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16"}

_QUALIFIERS = {
    "const",
    "volatile",
    "__restrict__",
    "__restrict",
    "restrict",
    "__grid_constant__",
    "struct",
    "register",
    "__device__",
    "__global__",
    "__constant__",
}
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"')
_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Param:
    """One parameter: its name, its base type (qualifiers stripped) and whether it is a pointer."""

    name: str
    type_name: str
    pointer: bool

    @property
    def scalar_ctype(self) -> type[ctypes._SimpleCData] | None:
        """The ctypes type for a by-value scalar, or None when the type is not a plain scalar."""
        return None if self.pointer else _SCALAR_TYPES.get(self.type_name)


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char in "(<[":
            depth += 1
        elif char in ")>]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if "".join(current).strip():
        parts.append("".join(current))
    return parts


def _parse_param(text: str) -> Param:
    text = text.split("=")[0].strip()  # default arguments
    pointer = "*" in text or "[" in text
    text = re.sub(r"\[[^\]]*\]", " ", text).replace("*", " ").replace("&", " ")
    words = [w for w in text.split() if w not in _QUALIFIERS]
    if not words:
        return Param(name="", type_name="", pointer=pointer)
    if len(words) == 1:  # unnamed parameter
        return Param(name="", type_name=words[0], pointer=pointer)
    return Param(name=words[-1], type_name=" ".join(words[:-1]), pointer=pointer)


def _matching_paren(text: str, open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return -1


def parse_signature(source: str, name: str) -> list[Param] | None:
    """Parameters of the function `name` (template arguments in `name` are ignored), or None if not found.

    Declarations without a body are skipped in favour of the definition.
    """
    base_name = name.split("<")[0].split("::")[-1].strip()
    clean = _STRINGS.sub('""', _COMMENTS.sub(" ", source))
    for match in re.finditer(rf"\b{re.escape(base_name)}\s*\(", clean):
        before = clean[max(0, match.start() - 200) : match.start()]
        tokens = _IDENT.findall(before)
        # A definition is preceded by its return type and followed by a body.
        if not tokens or tokens[-1] in {"return", "if", "while", "for", "sizeof"}:
            continue
        close = _matching_paren(clean, match.end() - 1)
        if close < 0:
            continue
        after = clean[close + 1 : close + 200].lstrip()
        if not after.startswith("{") and not after.startswith("__"):
            continue
        inner = clean[match.end() : close].strip()
        if inner in {"", "void"}:
            return []
        return [_parse_param(p) for p in _split_top_level(inner)]
    return None
