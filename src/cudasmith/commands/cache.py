"""`cudasmith cache`: where the cache is, how big each kind of artefact is, and clearing it."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from cudasmith.commands.options import JsonOption
from cudasmith.errors import UsageError


def cache_command(
    kind: Annotated[
        str | None,
        typer.Argument(
            metavar="KIND",
            help="Only this kind: cuda, cpu, extensions, baselines, device.",
            show_default=False,
        ),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Delete the cached artefacts (of KIND only, if given).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Clear without asking (for scripts).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Show the cache (compiled kernels, baseline times, device measurements) or clear it.

    It lives in ~/.cache/cudasmith, or where CUDASMITH_CACHE points. Everything in it is made again when
    needed: cleared kernels are compiled again, baselines timed again, device peaks measured again.
    What a judged solution compiles (compile_c, compile_cuda, load_inline) is kept in a folder of its own
    under extensions/. A baseline time is kept only when it was timed quietly (little noise, the device
    held alone), and device peaks only when a second measurement confirms them: on a busy machine
    baselines/ and device/ may stay empty.

    Example: [bold]cudasmith cache[/] · [bold]cudasmith cache --clear baselines --yes[/]
    """
    from cudasmith.report.formats import output_console, plain_table
    from cudasmith.runtime.cache import cache_root, cache_usage, clear_cache
    from cudasmith.wording import byte_size, plural

    usage = cache_usage()
    chosen = [entry for entry in usage if kind is None or entry.kind == kind]
    if not chosen:
        raise UsageError(f"no cache kind {kind!r}; the kinds are {', '.join(e.kind for e in usage)}")
    if clear:
        what = f"the {kind} cache" if kind else "the whole cache"
        size = byte_size(sum(entry.bytes for entry in chosen))
        if not yes:
            if not sys.stdin.isatty():
                raise UsageError(f"clearing {what} ({size}) needs --yes when nobody is there to confirm")
            typer.confirm(f"Delete {what} ({size}) in {cache_root()}?", abort=True)
        freed = clear_cache(kind)
        typer.echo(f"cleared {what}: {byte_size(freed)} freed")
        return
    if as_json:
        document = {
            "path": str(cache_root()),
            "kinds": [
                {"kind": e.kind, "path": str(e.path), "files": e.files, "bytes": e.bytes, "holds": e.holds}
                for e in chosen
            ],
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    console = output_console()
    console.print(f"cache: {cache_root()}", highlight=False, soft_wrap=True)
    table = plain_table()
    table.add_column("kind", no_wrap=True)
    table.add_column("files", no_wrap=True, justify="right")
    table.add_column("size", no_wrap=True, justify="right")
    table.add_column("what it holds", ratio=1)
    for entry in chosen:
        table.add_row(entry.kind, str(entry.files), byte_size(entry.bytes), entry.holds)
    console.print(table)
    total = sum(entry.bytes for entry in chosen)
    console.print(
        f"[dim]{plural(sum(e.files for e in chosen), 'file')}, {byte_size(total)}. "
        "`cudasmith cache --clear [KIND]` deletes them; they are made again when needed.[/]",
        highlight=False,
    )
