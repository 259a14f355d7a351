"""Temporary folders named by their owner: a later process clears those a killed one left, and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudasmith import tempdirs
from cudasmith.tempdirs import UNOWNED_KEPT_S, owned_tempdir, owner_tag, sweep_orphans

PREFIX = "cudasmith-scratch-"
# A process that makes one owned folder, writes a file into it as a candidate would, and is killed outright.
KILLED = """
import os, signal
from cudasmith.tempdirs import owned_tempdir
folder = owned_tempdir("cudasmith-scratch-")
(folder / "left.bin").write_bytes(b"x" * 1024)
print(folder, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system's temporary folder moved to tmp_path, and this process's sweeps forgotten."""
    monkeypatch.setattr(tempdirs.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempdirs, "_swept", set())
    return tmp_path


def namespace() -> str:
    tag = owner_tag()
    assert tag is not None, "this machine's /proc tells a process's namespace and start"
    return tag.split(".", 1)[0]


def test_a_folder_is_named_by_the_process_that_made_it(in_tmp: Path) -> None:
    folder = owned_tempdir(PREFIX)
    assert folder.is_dir() and folder.parent == in_tmp
    assert folder.name.startswith(f"{PREFIX}{owner_tag()}-")


def test_the_folder_of_a_killed_process_is_cleared_by_the_next_one(in_tmp: Path) -> None:
    env = {**os.environ, "TMPDIR": str(in_tmp), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", KILLED], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == -signal.SIGKILL
    left = Path(done.stdout.strip())
    assert (left / "left.bin").is_file(), "a process killed outright removes nothing"
    mine = owned_tempdir(PREFIX)  # the first of its prefix in this process: it sweeps
    assert not left.exists()
    assert mine.is_dir()


def test_folders_of_live_owners_other_namespaces_and_other_prefixes_are_kept(in_tmp: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for _ in range(100):  # its /proc entry, with its start time, once it runs
            start = tempdirs._start_ticks(sleeper.pid)
            if start is not None:
                break
            time.sleep(0.01)
        assert start is not None
        ns = namespace()
        kept = [
            in_tmp / f"{PREFIX}{owner_tag()}-mine",  # this process
            in_tmp / f"{PREFIX}{ns}.{sleeper.pid}.{start}-alive",  # another live process
            in_tmp / f"{PREFIX}1.{os.getpid()}.1-elsewhere",  # a pid of another pid namespace
            in_tmp / f"cudasmith-lane-{ns}.999999999.1-other-prefix",  # not the prefix swept
            in_tmp / f"{PREFIX}young",  # the old naming, less than a week old
        ]
        gone = [
            in_tmp
            / f"{PREFIX}{ns}.{os.getpid()}.{tempdirs._start_ticks(os.getpid()) + 1}-reused",  # pid reused
            in_tmp / f"{PREFIX}{ns}.999999999.1-dead",  # no such process
            in_tmp / f"{PREFIX}old",  # the old naming, unchanged for over a week
        ]
        for folder in (*kept, *gone):
            folder.mkdir()
            (folder / "file").write_text("candidate's")
        week_ago = time.time() - UNOWNED_KEPT_S - 60
        os.utime(in_tmp / f"{PREFIX}old", (week_ago, week_ago))
        removed = sweep_orphans(in_tmp, PREFIX, ns)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert sorted(removed) == sorted(gone)
    assert all(folder.is_dir() for folder in kept)
    assert not any(folder.exists() for folder in gone)


def test_only_plain_folders_are_removed_never_through_a_link(
    in_tmp: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    target = tmp_path_factory.mktemp("elsewhere")
    (target / "precious").write_text("kept")
    dead = f"{namespace()}.999999999.1"
    (in_tmp / f"{PREFIX}{dead}-link").symlink_to(target, target_is_directory=True)
    (in_tmp / f"{PREFIX}{dead}-file").write_text("not a folder")
    assert sweep_orphans(in_tmp, PREFIX, namespace()) == []
    assert (target / "precious").read_text() == "kept"
    assert (in_tmp / f"{PREFIX}{dead}-file").is_file()


def test_a_process_sweeps_each_prefix_once(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sweeps: list[str] = []
    monkeypatch.setattr(tempdirs, "sweep_orphans", lambda base, prefix, ns: sweeps.append(prefix) or [])
    for prefix in (PREFIX, PREFIX, "cudasmith-lane-", PREFIX):
        owned_tempdir(prefix)
    assert sweeps == [PREFIX, "cudasmith-lane-"]


def test_an_owner_whose_proc_entry_cannot_be_read_is_kept(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace()
    hidden, dead = 4194000, 999999999  # an entry /proc refuses to show (hidepid, a confined reader); none
    read_text = Path.read_text

    def refusing(path: Path, *args: object, **kwargs: object) -> str:
        if str(path) == f"/proc/{hidden}/stat":
            raise PermissionError(13, "Permission denied", str(path))
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", refusing)
    unreadable = in_tmp / f"{PREFIX}{ns}.{hidden}.1-unreadable"
    gone = in_tmp / f"{PREFIX}{ns}.{dead}.1-dead"
    for folder in (unreadable, gone):
        folder.mkdir()
    assert sweep_orphans(in_tmp, PREFIX, ns) == [gone]
    assert unreadable.is_dir()
