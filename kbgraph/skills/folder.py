"""The folder a skills export writes into: what kbgraph may touch there, and an all-or-nothing write.

Skills usually go where an agent framework looks for them (``~/.claude/skills``, a project's
``.agents/skills`` …), next to skills a person wrote. So the export owns only what it can prove it
wrote: a folder is kbgraph's when the manifest in the target, :data:`MANIFEST_NAME`, lists it
under the namespace being exported **and** its ``SKILL.md`` still carries the marker
``metadata.generated-by: kbgraph`` for that namespace. Only such folders are replaced or removed;
within them, only the files the manifest lists — a file someone added to a skill folder is kept
(copied into the new folder, or left where it is when the skill goes away).

:func:`write_skill_folders` checks everything first and refuses, changing nothing, when the target
is a file or cannot be written, or when a skill's name is taken by a folder that is not this
namespace's. Then it writes the new and changed folders into a staging folder beside the target
and swaps them in by renames (undone if one fails), so an agent reading the folder meanwhile sees
each skill whole, old or new. Folders whose files are already byte for byte what the export would
write are not touched at all.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kbgraph.core.errors import InvalidInputError, KbgraphError
from kbgraph.skills.names import name_problems, yaml_string

__all__ = ["MANIFEST_NAME", "MARKER_KEY", "MARKER_VALUE", "WriteOutcome", "is_marked", "read_manifest",
           "target_problems", "write_skill_folders"]

#: Lists, per namespace, the skill folders kbgraph wrote into the target and their files.
MANIFEST_NAME = ".kbgraph-skills.json"
MANIFEST_FORMAT = "kbgraph-skills/1"
#: The front matter's ``metadata`` entry that marks a skill kbgraph wrote; the namespace is the
#: ``kbgraph-namespace`` entry next to it.
MARKER_KEY, MARKER_VALUE, NAMESPACE_KEY = "generated-by", "kbgraph", "kbgraph-namespace"
SKILL_FILE = "SKILL.md"
#: What the export creates is its owner's only, like an export file or a report: the skills hold a
#: namespace's task texts and recoveries.
FILE_MODE, FOLDER_MODE = 0o600, 0o700
_REFUSED = "cannot export skills, nothing was written"


def target_problems(directory: Path) -> list[str]:
    """Why skills cannot be exported into ``directory`` (empty when they can). A missing folder is
    created, when its parent exists and is writable."""
    if directory.exists() and not directory.is_dir():
        return [f"{directory}: is a file, not a folder; name a folder to export the skills into"]
    if directory.is_dir():
        return [] if os.access(directory, os.W_OK | os.X_OK) else [f"{directory}: folder is not writable"]
    parent = directory.absolute().parent
    if not parent.is_dir():
        return [f"{directory}: folder {parent} does not exist"]
    if not os.access(parent, os.W_OK | os.X_OK):
        return [f"{directory}: cannot be created, folder {parent} is not writable"]
    return []


def marker_lines(namespace: str) -> list[str]:
    """The front matter ``metadata`` lines that mark a skill as kbgraph's, for ``namespace``."""
    return [f"  {MARKER_KEY}: {yaml_string(MARKER_VALUE)}", f"  {NAMESPACE_KEY}: {yaml_string(namespace)}"]


def is_marked(folder: Path, namespace: str) -> bool:
    """Whether ``folder/SKILL.md`` carries kbgraph's marker for ``namespace`` in its front matter."""
    try:
        head = (folder / SKILL_FILE).read_text(encoding="utf-8").split("---", 2)[1].splitlines()
    except (OSError, UnicodeDecodeError, IndexError):
        return False
    return all(line in head for line in marker_lines(namespace))


def read_manifest(directory: Path) -> dict[str, dict[str, list[str]]]:
    """namespace → skill folder → its files, from the target's manifest (empty when there is none)."""
    path = directory / MANIFEST_NAME
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"format is {data.get('format')!r}, not {MANIFEST_FORMAT!r}")
        return {str(ns): {str(name): [str(f) for f in files] for name, files in entry["skills"].items()}
                for ns, entry in data["namespaces"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInputError([f"{path}: not a manifest kbgraph can read ({exc}); move it away to export "
                                 "into this folder"], headline=_REFUSED) from None


def _manifest_bytes(manifest: Mapping[str, Mapping[str, Sequence[str]]]) -> bytes:
    data = {"format": MANIFEST_FORMAT,
            "note": "Written by `kbgraph skills export`: the skill folders and files it wrote here, per "
                    "namespace. A re-export replaces or removes these, and nothing else.",
            "namespaces": {ns: {"skills": {name: sorted(files) for name, files in sorted(entry.items())}}
                           for ns, entry in sorted(manifest.items())}}
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _relative_files(folder: Path) -> list[str]:
    """Every file under ``folder`` (a symbolic link counts as one), as relative POSIX paths."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_symlink() or not p.is_dir())


def _folder_problems(folders: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Names that are not skill names, and file paths that would leave their folder."""
    problems = [f"skills: {problem}" for name in folders for problem in name_problems(name)]
    for name, files in folders.items():
        if SKILL_FILE not in files:
            problems.append(f"skills: {name}: no {SKILL_FILE}")
        for relative in files:
            parts = PurePosixPath(relative).parts
            if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
                problems.append(f"skills: {name}: {relative!r} is not a path inside the skill's folder")
    return problems


@dataclass
class _Owned:
    """A folder of this namespace's earlier export: the bytes of the files kbgraph wrote in it, and
    the files someone else added."""

    ours: dict[str, bytes]
    foreign: list[str]


@dataclass
class WriteOutcome:
    written: list[str]
    unchanged: list[str]
    removed: list[str]


def write_skill_folders(directory: Path, namespace: str, folders: Mapping[str, Mapping[str, str]]) -> WriteOutcome:
    """Makes ``directory`` hold exactly ``folders`` (name → relative path → text) as the skills of
    ``namespace``, leaving everything that is not this namespace's export alone (module docstring).
    Raises InvalidInputError, having changed nothing, when it cannot; KbgraphError when the file
    system fails during the swap (the renames made are undone first)."""
    if problems := target_problems(directory) or _folder_problems(folders):
        raise InvalidInputError(problems, headline=_REFUSED)
    wanted = {name: {path: text.encode("utf-8") for path, text in files.items()} for name, files in folders.items()}
    exists = directory.is_dir()
    manifest = read_manifest(directory) if exists else {}
    owned: dict[str, _Owned] = {}
    for name, files in sorted(manifest.get(namespace, {}).items()):
        folder = directory / name
        if folder.is_symlink() or not folder.is_dir() or not is_marked(folder, namespace):
            continue  # gone, or no longer kbgraph's (someone replaced it): not ours to touch
        present = _relative_files(folder)
        listed = set(files)
        owned[name] = _Owned({f: (folder / f).read_bytes() for f in present if f in listed},
                             [f for f in present if f not in listed])

    problems = []
    for name in sorted(wanted):
        target = directory / name
        if name in owned:
            clash = sorted(set(owned[name].foreign) & set(wanted[name]))
            if clash:
                problems.append(f"{target}: holds {', '.join(clash)}, which kbgraph did not write and would "
                                "now overwrite; move it out, then export again")
        elif target.exists() or target.is_symlink():
            other = next((ns for ns, entry in sorted(manifest.items()) if ns != namespace and name in entry), None)
            whose = f"the skills exported from namespace {other!r}" if other else "something kbgraph did not write"
            problems.append(f"{target}: already exists and holds {whose}; move it, or export into another folder")
    if problems:
        raise InvalidInputError(problems, headline=_REFUSED)

    changed = sorted(n for n, files in wanted.items() if n not in owned or owned[n].ours != files)
    unchanged = sorted(set(wanted) - set(changed))
    stale = sorted(set(owned) - set(wanted))
    manifest = {ns: entry for ns, entry in manifest.items() if ns != namespace}
    manifest[namespace] = {name: sorted(files) for name, files in wanted.items()}
    manifest_bytes = _manifest_bytes(manifest)
    manifest_path = directory / MANIFEST_NAME
    same_manifest = manifest_path.is_file() and manifest_path.read_bytes() == manifest_bytes
    if exists and not changed and not stale and same_manifest:
        return WriteOutcome([], unchanged, [])
    _Swap(directory, exists).run({n: wanted[n] for n in changed}, {n: owned[n] for n in stale},
                                 {n: owned[n].foreign for n in changed if n in owned}, manifest_bytes)
    return WriteOutcome(changed, unchanged, stale)


class _Swap:
    """Stages the new folders beside the target, then renames them in; every rename is recorded so
    that an error undoes them all."""

    def __init__(self, directory: Path, exists: bool):
        self.directory = directory
        self.exists = exists
        self.staging = self._staging_parent() / f".{directory.absolute().name}.kbgraph-skills-{uuid.uuid4().hex[:12]}"
        self.trash = self.staging / ".replaced"
        self.moves: list[tuple[Path, Path]] = []

    def _staging_parent(self) -> Path:
        # Beside the target when writable and on the same file system (so renames are atomic);
        # else inside it, hidden.
        parent = self.directory.absolute().parent
        if not self.exists:
            return parent
        try:
            same_device = parent.stat().st_dev == self.directory.stat().st_dev
        except OSError:
            same_device = False
        return parent if same_device and os.access(parent, os.W_OK | os.X_OK) else self.directory

    def _move(self, source: Path, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        self.moves.append((source, target))

    def run(self, changed: Mapping[str, Mapping[str, bytes]], stale: Mapping[str, _Owned],
            kept: Mapping[str, Sequence[str]], manifest: bytes) -> None:
        """Writes ``changed`` folders (keeping the ``kept`` files someone added to them), removes
        kbgraph's files of ``stale`` folders, and puts the manifest in place."""
        try:
            os.mkdir(self.staging, FOLDER_MODE)
            for name, files in changed.items():
                for relative, data in files.items():
                    path = self.staging / name / relative
                    _private_folders(self.staging, path.parent)
                    _write_private(path, data)
                for relative in kept.get(name, ()):
                    path = self.staging / name / relative
                    _private_folders(self.staging, path.parent)
                    shutil.copy2(self.directory / name / relative, path, follow_symlinks=False)
            _write_private(self.staging / MANIFEST_NAME, manifest)
            if not self.exists:
                os.rename(self.staging, self.directory)  # the whole export appears at once
                return
            for name, folder in stale.items():
                if folder.foreign:  # someone's files stay where they are; only kbgraph's go
                    for relative in folder.ours:
                        self._move(self.directory / name / relative, self.trash / name / relative)
                else:
                    self._move(self.directory / name, self.trash / name)
            for name in changed:
                if (self.directory / name).exists():
                    self._move(self.directory / name, self.trash / name)
                self._move(self.staging / name, self.directory / name)
            if (self.directory / MANIFEST_NAME).exists():
                self._move(self.directory / MANIFEST_NAME, self.trash / MANIFEST_NAME)
            self._move(self.staging / MANIFEST_NAME, self.directory / MANIFEST_NAME)
        except OSError as exc:
            self._undo()
            raise KbgraphError(f"could not write skills into {self.directory}: {exc.strerror or exc} "
                               f"({exc.filename or self.directory}); the folder was left as it was") from None
        finally:
            if self.staging.exists() and self.staging != self.directory:
                shutil.rmtree(self.staging, ignore_errors=True)
        for name, folder in stale.items():
            if folder.foreign:
                _remove_empty_folders(self.directory / name)

    def _undo(self) -> None:
        for source, target in reversed(self.moves):
            try:
                os.rename(target, source)
            except OSError:
                pass  # best effort: the error that brought us here is the one to report


def _private_folders(root: Path, folder: Path) -> None:
    """Creates ``folder`` and each missing folder between it and ``root`` with FOLDER_MODE
    (``Path.mkdir(parents=True)`` gives the parents it creates the default mode)."""
    missing = []
    while folder != root and not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        os.mkdir(path, FOLDER_MODE)


def _write_private(path: Path, data: bytes) -> None:
    # Created with FILE_MODE from the first byte, as export and report write theirs.
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "wb") as sink:
        sink.write(data)


def _remove_empty_folders(folder: Path) -> None:
    """Removes the folders under ``folder`` that kbgraph's files leave empty (never ``folder`` itself,
    which still holds someone's files)."""
    for path in sorted((p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink()), reverse=True):
        try:
            path.rmdir()
        except OSError:
            pass  # not empty: it holds someone's files
