"""Write a site source into a folder: only what changed, nothing outside it, and never a file measure did not write.

A manifest in the folder (``.measure-manifest.json``: a dot file, which site generators
leave out of the site) lists every file measure wrote there with its sha256. That is
how a render knows its own files: a page of a run that left the results tree is removed
when the manifest lists it with the content measure gave it, and kept, and reported, when
someone has changed it since. A file in the way that the manifest does not list is never
overwritten: the render stops before writing anything, naming it. Files whose content is
already right are not touched, so rendering the same records twice writes nothing (and a
generator's own serve, watching the folder, rebuilds only on a real change).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from measure.errors import MeasureError
from measure.site.source import SiteSource
from measure.writing import contained, json_text, reason, write_bytes

MANIFEST = ".measure-manifest.json"
MANIFEST_VERSION = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Rendered:
    """What one render did to its folder."""

    folder: Path
    files: int
    """Files of this render (pages, data and assets)."""
    pages: int
    written: tuple[str, ...]
    """New or changed files, relative to the folder."""
    removed: tuple[str, ...]
    """Files of an earlier render that this one no longer has."""
    kept: tuple[str, ...]
    """Files of an earlier render that this one no longer has, changed by someone since: left in place."""

    def describe(self) -> str:
        said = f"{self.folder}: {self.pages} pages, {self.files - self.pages} other files"
        if not (self.written or self.removed or self.kept):
            return f"{said}; unchanged"
        said += f"; {len(self.written)} written, {len(self.removed)} removed"
        if self.kept:
            said += f"; kept {len(self.kept)} changed by hand since measure wrote them: " + ", ".join(self.kept)
        return said


def _relative(path: object, manifest: Path) -> str:
    """A manifest entry as a path inside the folder: relative, no ``..``, no backslash."""
    if not isinstance(path, str) or not path or "\\" in path:
        raise MeasureError(f"{manifest}: field 'files': {path!r} is not a relative path")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or pure.as_posix() != path:
        raise MeasureError(f"{manifest}: field 'files': {path!r} is not a relative path inside the folder")
    return path


def read_manifest(folder: Path) -> dict[str, str]:
    """Path -> sha256 of every file an earlier render wrote into ``folder`` (empty when none did)."""
    path = folder / MANIFEST
    if not path.exists():
        return {}
    contained(path, folder)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        why = reason(exc) if isinstance(exc, OSError) else "not UTF-8 JSON"
        raise MeasureError(
            f"{path}: cannot read measure's manifest ({why}); delete it only with the files it lists"
        ) from exc
    if not isinstance(doc, dict) or doc.get("manifest_version") != MANIFEST_VERSION:
        raise MeasureError(f"{path}: field 'manifest_version': expected {MANIFEST_VERSION}")
    files = doc.get("files")
    if not isinstance(files, dict):
        raise MeasureError(f"{path}: field 'files': expected an object of path -> sha256")
    for name, sha in files.items():
        _relative(name, path)
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            raise MeasureError(f"{path}: field 'files': {name!r} has no sha256")
    return dict(files)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _on_disk(path: Path, folder: Path) -> str | None:
    """sha256 of the file at ``path`` (None: no file there); a folder or a symlink in the way is an error."""
    contained(path, folder)
    if path.is_dir():
        raise MeasureError(f"{path}: is a folder; measure writes a file there")
    try:
        return _sha256(path.read_bytes())
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read ({reason(exc)})") from exc


def _manifest_text(files: dict[str, str]) -> str:
    doc = {"manifest_version": MANIFEST_VERSION, "written_by": "measure render", "files": dict(sorted(files.items()))}
    return json_text(doc, MANIFEST, indent=1)


def _write_manifest(folder: Path, files: dict[str, str]) -> None:
    text = _manifest_text(files).encode("utf-8")
    if _on_disk(folder / MANIFEST, folder) != _sha256(text):
        write_bytes(folder / MANIFEST, text, root=folder)


def _prune(folder: Path, emptied: set[Path]) -> None:
    """Remove the folders that removing stale files left empty, deepest first, never ``folder`` itself."""
    top = folder.resolve()
    for path in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
        while path.resolve() != top and top in path.resolve().parents and not path.is_symlink():
            try:
                path.rmdir()
            except OSError:  # not empty (a file of someone else's) or already gone
                break
            path = path.parent


def _refuse_foreign(folder: Path, present: dict[str, str | None], old: dict[str, str], hashes: dict[str, str]) -> None:
    """A file at a page's path that measure did not write (not in the manifest, other bytes) is never replaced."""
    foreign = sorted(p for p, sha in present.items() if sha is not None and p not in old and sha != hashes[p])
    if foreign:
        more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise MeasureError(
            f"{folder / foreign[0]}{more}: exists and measure did not write it (it is not in {folder / MANIFEST}); "
            "move it away or render into another folder"
        )


def _remove_stale(folder: Path, stale: list[str], old: dict[str, str]) -> tuple[list[str], list[str]]:
    """Files measure wrote before that the site no longer has: removed while they hold what measure wrote
    (then their emptied folders too), kept when someone changed them. Returns (removed, kept)."""
    removed: list[str] = []
    kept: list[str] = []
    emptied: set[Path] = set()
    for path in stale:
        target = folder / path
        sha = None if target.is_dir() else _on_disk(target, folder)
        if sha is None and not target.is_dir():
            removed.append(path)  # already gone
        elif sha == old[path]:
            try:
                target.unlink()
            except OSError as exc:
                raise MeasureError(f"{target}: cannot remove this stale page ({reason(exc)})") from exc
            removed.append(path)
            emptied.add(target.parent)
        else:
            kept.append(path)
    _prune(folder, emptied)
    return removed, kept


def write_site_source(source: SiteSource, folder: Path) -> Rendered:
    """Make ``folder`` hold exactly ``source`` among the files measure wrote there; see the module docstring."""
    new = dict(source.contents())
    if MANIFEST in new:
        raise MeasureError(f"{MANIFEST}: a page cannot take the manifest's name")
    hashes = {path: _sha256(data) for path, data in new.items()}
    old = read_manifest(folder)
    present = {path: _on_disk(folder / path, folder) for path in new}
    _refuse_foreign(folder, present, old, hashes)
    changed = [p for p in new if present[p] != hashes[p]]
    stale = [p for p in old if p not in new]
    if changed or stale:
        _write_manifest(folder, old | hashes)  # first: a render stopped half-way still knows every file it wrote
    for path in changed:
        write_bytes(folder / path, new[path], root=folder)
    removed, kept = _remove_stale(folder, stale, old)
    _write_manifest(folder, hashes)
    pages = sum(p.endswith(".md") for p in new)
    return Rendered(folder, len(new), pages, tuple(changed), tuple(removed), tuple(kept))
