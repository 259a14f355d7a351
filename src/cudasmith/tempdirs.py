"""Temporary folders named by the process that made them, so that a later process clears those of one that
was killed.

A candidate worker's scratch folder holds a copy of its solution and whatever the candidate wrote to its
TMPDIR and HOME; the executors' folders hold the solutions they build ahead. Each is removed when its
worker or executor ends, but a process killed outright (SIGKILL, a benchmark's budget, a lost session)
leaves them in the system's temporary folder for good: one CI run of the test suite left 22.

`owned_tempdir(prefix)` makes `<prefix><pid namespace>.<pid>.<start>-<random>` there, the owner being this
process (its start time, in clock ticks since boot, tells it from a later process given the same pid).
The first time a process makes a folder of a prefix, it removes every folder of that prefix whose owner
is gone: no process of that pid in this pid namespace, or one started at another time. A folder of
another pid namespace (a container sharing the temporary folder) is left alone, as is anything not a
folder of this user, and everything where /proc cannot be read. Folders named as before owners were
(`<prefix><random>`) are removed once they are a week old: no worker lives that long.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

# A folder of the old naming (no owner) is removed once it has not changed for this long.
UNOWNED_KEPT_S = 7 * 24 * 3600.0
_OWNER = re.compile(r"^(\d+)\.(\d+)\.(\d+)-")
_swept: set[tuple[str, str]] = set()
_lock = threading.Lock()


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat's 22nd field), or None."""
    try:
        return _read_start(pid)
    except OSError:
        return None


def _read_start(pid: int) -> int | None:
    """The start time /proc/PID/stat holds, or None where its line holds none; OSError where it cannot be
    read (FileNotFoundError: no such process)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name may hold spaces and parentheses: the fields after it start past the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _pid_namespace() -> str | None:
    """This process's pid namespace, as its inode number ('4026531836'), or None where /proc says nothing."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # 'pid:[4026531836]'
    except OSError:
        return None
    found = re.search(r"\[(\d+)\]", link)
    return found.group(1) if found else None


def owner_tag() -> str | None:
    """'<pid namespace>.<pid>.<start>' of this process, or None where /proc cannot tell them."""
    namespace, start = _pid_namespace(), _start_ticks(os.getpid())
    if namespace is None or start is None:
        return None
    return f"{namespace}.{os.getpid()}.{start}"


def owned_tempdir(prefix: str) -> Path:
    """A new folder in the system's temporary folder, named by its owner; the first of each prefix in a
    process clears the folders of that prefix whose owners are gone (see the module's docstring)."""
    base = Path(tempfile.gettempdir())
    tag = owner_tag()
    with _lock:
        first = (str(base), prefix) not in _swept
        _swept.add((str(base), prefix))
    if first and tag is not None:
        sweep_orphans(base, prefix, tag.split(".", 1)[0])
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{tag}-" if tag is not None else prefix, dir=base))


def _owner_gone(pid: int, start: int) -> bool:
    """True only where /proc says so: no such process, or one started at another time. An entry that exists
    but cannot be read (another user's under hidepid, a confined reader) says nothing: the owner is kept."""
    try:
        found = _read_start(pid)
    except (FileNotFoundError, ProcessLookupError):
        return True
    except OSError:
        return False
    return found is not None and found != start


def sweep_orphans(base: Path, prefix: str, namespace: str, now: float | None = None) -> list[Path]:
    """Remove the folders of `prefix` in `base` whose owner in pid namespace `namespace` is gone, and those of
    the old naming a week unchanged; returns what was removed. Only plain folders of this user are."""
    removed: list[Path] = []
    now = time.time() if now is None else now
    uid = os.getuid()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not entry.is_dir(follow_symlinks=False) or info.st_uid != uid:
            continue
        owner = _OWNER.match(entry.name[len(prefix) :])
        if owner is not None:
            if owner.group(1) != namespace or not _owner_gone(int(owner.group(2)), int(owner.group(3))):
                continue
        elif now - info.st_mtime < UNOWNED_KEPT_S:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed
