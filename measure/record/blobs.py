"""What git already knows of a results tree: the content id of every tracked record file it has not seen change.

A publish job checks the ``results`` branch out afresh each time, so every record file is new to the
file-stamp index a build keeps (:mod:`measure.results.cache`), and finding each record's sha256 would mean
reading a year of records. Git's own index holds each tracked file's blob id (the SHA-1 of its bytes) and the
stamps of the checkout it wrote, so ``git ls-files`` and ``git diff-files`` name every unmodified file's
content without reading it. The summary index maps blob ids to the sha256 it keys summaries by.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

BLOB_ID_LENGTHS = (40, 64)
"""SHA-1 and SHA-256 repositories."""


def _git(results: Path, *args: str) -> list[str] | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # a read: never take the index lock another git holds
        done = subprocess.run([git, "-C", str(results), *args], capture_output=True, check=True, timeout=120, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return [x for x in done.stdout.decode("utf-8", "surrogateescape").split("\0") if x]


def git_blobs(results: Path) -> dict[str, str]:
    """Each tracked record file under ``results`` whose checkout git has not seen change: path -> blob id.

    Empty outside a git work tree, without git, or on any git error: then every file is hashed as before.
    Files git reports modified (its stamps say so, or their bytes differ) and untracked files are left out.
    """
    listed = _git(results, "ls-files", "--stage", "-z", "--", ".")
    changed = _git(results, "diff-files", "--name-only", "--relative", "-z", "--", ".")
    if listed is None or changed is None:
        return {}
    modified = set(changed)
    out = {}
    for line in listed:
        info, _, name = line.partition("\t")
        parts = info.split(" ")
        if len(parts) != 3 or parts[2] != "0" or name in modified or len(parts[1]) not in BLOB_ID_LENGTHS:
            continue  # a merge conflict's stages, or an entry that is not a plain blob
        if name.endswith((".json", ".json.gz")):
            out[str(results / name)] = parts[1]
    return out
