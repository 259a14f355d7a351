"""Words in messages people read: counts with their noun in the right number."""

from __future__ import annotations


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """'1 config', '3 configs', '0 configs'; `plural_form` for nouns that do not just take an s."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"
