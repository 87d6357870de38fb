"""The panel's ES modules joined into the one module anywidget loads.

anywidget hands the browser a single module, from which relative imports cannot resolve, and
the panel is plain ESM with no build step. So its parts (``panel_js/``, one concern each) are
joined here when the package loads: each part once, after the parts it imports, without its
``import`` lines and ``export`` keywords. Only the forms the parts use are accepted, and two
parts may not declare the same name, so a part that would not join fails here, loudly, rather
than in the user's browser.
"""

from __future__ import annotations

import re
from pathlib import Path

_IMPORT = re.compile(r'^import \{[^}]*\} from "\./([\w-]+\.js)";\n', re.MULTILINE)
_EXPORT = re.compile(r"^export (?=function |const )", re.MULTILINE)
_UNJOINABLE = re.compile(r"^(?:import\b|export (?!default \{))", re.MULTILINE)
_DEFAULT = re.compile(r"^export default\b", re.MULTILINE)
_DECLARED = re.compile(r"^(?:function|const|let|class) (\w+)", re.MULTILINE)


def joined(entry: Path) -> str:
    """The module at ``entry`` and every part it imports, as one module's source."""
    bodies: list[str] = []
    declared: dict[str, str] = {}  # top-level name -> the part that declares it
    done: set[Path] = set()

    def add(path: Path, importers: tuple[Path, ...]) -> None:
        if path in importers:
            chain = " -> ".join(p.name for p in (*importers, path))
            raise ValueError(f"the panel's modules import each other in a circle: {chain}")
        if path in done:
            return
        text = path.read_text(encoding="utf-8")
        for name in _IMPORT.findall(text):
            add(path.parent / name, (*importers, path))
        body = _EXPORT.sub("", _IMPORT.sub("", text))
        if _UNJOINABLE.search(body) or (importers and _DEFAULT.search(body)):  # one default: the entry's
            raise ValueError(f"{path.name}: an import or export the panel's join does not handle")
        for name in _DECLARED.findall(body):
            if name in declared:
                raise ValueError(f"{path.name} declares {name}, already declared in {declared[name]}")
            declared[name] = path.name
        done.add(path)
        bodies.append(body)

    add(entry, ())
    return "\n".join(bodies)
