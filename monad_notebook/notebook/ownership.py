"""Which session is a notebook's own: each notebook has one, and two notebooks never share it unasked.

A notebook names its session in its own metadata (``metadata.monad.session``): the extension
writes it into the open document the first time, so the name travels with the file when it is
renamed or moved. The session's record keeps the notebook's path (``meta["notebook"]``). At a
kernel's first ``%%monad`` the two are compared:

- the record's path is this notebook's, or no longer exists: the notebook was renamed or moved,
  and the session follows it (its record takes the new path);
- the record's path is another notebook that still exists: this one is a copy, and its session
  starts as a branch of that one's, under a name of its own;
- no name in the metadata (VS Code, a script, a notebook never saved with it), or a name that is
  no notebook's (a session named by hand): the session recorded for this path, else a new one
  named for the file.

Where no file is known at all (a plain IPython shell) the session is "default", as before.
Every failure to read an identity falls back quietly to the path.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monad_notebook.branching import clone_session
from monad_notebook.notebook.document import MAX_NOTEBOOK_BYTES, saved_path
from monad_notebook.store.base import Sessions, Store
from monad_notebook.store.rows import is_text

DEFAULT = "default"
NOTEBOOK = "notebook"  # the record's meta key: the absolute path of the notebook the session belongs to
MOVED_NOTE = "told_notebooks_have_sessions"  # on the old "default" record, once the note was shown


@dataclass(frozen=True)
class Identity:
    """Where the notebook is now (absolute, "" when unknown) and the session its metadata names ("" if none)."""

    path: str = ""
    claimed: str = ""


@dataclass(frozen=True)
class Owned:
    """The notebook's session and, when something happened to get it, one line saying what."""

    name: str
    note: str = ""


def _real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path)) if path else ""


def owner_of(meta: dict[str, Any]) -> str:
    value = meta.get(NOTEBOOK)
    return value if isinstance(value, str) else ""


def live_identity(about: dict[str, Any]) -> Identity:
    """From the extension's hello: the open document's path under the server's root, and its metadata's name."""
    root, path = about.get("root"), about.get("path")
    claimed = about.get("session")
    claimed = claimed if isinstance(claimed, str) else ""
    if not isinstance(root, str) or not root or not isinstance(path, str) or not path:
        return Identity(claimed=claimed)
    return Identity(_real(str(Path(os.path.expanduser(root)) / path)), claimed)


def saved_identity(namespace: dict[str, Any], cwd: Path) -> Identity:
    """What the kernel reads itself: the file its frontend names (or a script's ``__file__``) and its metadata."""
    found = saved_path(namespace, cwd)
    script = namespace.get("__file__")
    if found is None and type(script) is str and script:
        found = Path(script)
    if found is None:
        return Identity()
    try:
        path = _real(str(found if found.is_absolute() else cwd / found))
    except (OSError, ValueError):
        return Identity()
    return Identity(path, claimed_in(Path(path)))


def identity_of(shell: Any, notebook: Any) -> Identity:
    """Through the open notebook's frontend when there is one, else from what the kernel can read."""
    if notebook is not None:
        return notebook.identity()
    return saved_identity(getattr(shell, "user_ns", {}), Path.cwd())


def claimed_in(path: Path) -> str:
    """The session a saved notebook's metadata names, or "" (not a notebook, unreadable, none named)."""
    try:
        if path.suffix != ".ipynb" or path.stat().st_size > MAX_NOTEBOOK_BYTES:
            return ""
        data = json.loads(path.read_text(encoding="utf-8"))
        named = data["metadata"]["monad"]["session"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return ""
    return named if isinstance(named, str) else ""


def own_session(store: Sessions, identity: Identity) -> Owned:
    """The notebook's session, created, adopted or branched as the identity says; its record names the notebook."""
    here = identity.path
    if not here:
        return Owned(DEFAULT)
    claimed = store.get_session(identity.claimed) if identity.claimed else None
    owner = owner_of(claimed.meta) if claimed is not None else ""  # a session named by hand is no notebook's
    if claimed is not None and owner == here:
        return Owned(claimed.name)
    if claimed is not None and owner and not Path(owner).exists():  # renamed or moved: the session follows
        store.set_session_meta(claimed.name, {**claimed.meta, NOTEBOOK: here})
        where = f"now {shown_path(here)}; it was {shown_path(owner)}"
        return Owned(claimed.name, f"session {claimed.name!r} follows its notebook, {where}")
    mine = [r for r in store.list_sessions() if owner_of(r.meta) == here]
    if mine:
        return Owned(mine[0].name)
    if claimed is not None and owner:  # a copy: the original notebook is still where its session says
        name = free_name(store, here)
        clone_session(store, claimed.name, name)
        store.set_session_meta(name, {**claimed.meta, NOTEBOOK: here})
        return Owned(name, f"this notebook is a copy of {shown_path(owner)}: its session {name!r} "
                     f"starts as a branch of {claimed.name!r}")  # fmt: skip
    name = identity.claimed if identity.claimed and claimed is None else free_name(store, here)
    store.create_session(name, meta={NOTEBOOK: here})
    return Owned(name, _moved_note(store, name))


def free_name(store: Sessions, here: str) -> str:
    """The notebook file's stem, or the stem with the first free number after it."""
    stem = "".join(c if c.isprintable() else " " for c in Path(here).stem).strip()[:180]
    stem = stem if stem and is_text(stem) else "notebook"  # a file name's undecodable bytes are not a name
    if store.get_session(stem) is None:
        return stem
    number = 2
    while store.get_session(f"{stem}-{number}") is not None:
        number += 1
    return f"{stem}-{number}"


def _moved_note(store: Sessions, name: str) -> str:
    """Once per store that has a "default" session from before notebooks had their own: where it went."""
    old = store.get_session(DEFAULT)
    if old is None or owner_of(old.meta) or old.meta.get(MOVED_NOTE):
        return ""
    store.set_session_meta(DEFAULT, {**old.meta, MOVED_NOTE: True})
    return (
        f"each notebook now has its own session; this one's is {name!r}. The earlier shared session stays as "
        "'default': %monad session default returns to it"
    )


def shown_path(path: str) -> str:
    """A path as the user reads it: under their home as ``~/...``."""
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + os.sep) else path


def listing(store: Store, current: str | None) -> str:
    """``%monad sessions``: each session with its size, when it was last used and the notebook it belongs to."""
    records = store.list_sessions()
    if not records:
        return "no sessions yet: run a %%monad cell"
    lines = []
    for record in records:
        marker = "*" if record.name == current else " "
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.updated_at))
        owner = owner_of(record.meta)
        belongs = f"  notebook {shown_path(owner)}" if owner else ""
        lines.append(f"{marker} {record.name}  ({store.count_messages(record.name)} messages, {stamp}){belongs}")
    return "\n".join(lines)
