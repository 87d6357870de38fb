"""The panel's parts join into one module: each part once, after what it imports, or a loud error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from monad_notebook.widget.esm import joined
from monad_notebook.widget.panel import HERE, PANEL_ESM, MonadPanel


def parts(root: Path, **files: str) -> Path:
    root.mkdir(exist_ok=True)
    for name, text in files.items():
        (root / f"{name}.js").write_text(text)
    return root / "index.js"


def test_the_panel_ships_as_one_module_with_every_part_once() -> None:
    assert MonadPanel._esm == PANEL_ESM
    assert not re.search(r"^import\b", PANEL_ESM, re.MULTILINE)
    assert re.findall(r"^export .*", PANEL_ESM, re.MULTILINE) == ["export default { render };"]
    declared = re.findall(r"^(?:function|const) (\w+)", PANEL_ESM, re.MULTILINE)
    assert len(declared) == len(set(declared))
    for part in (HERE / "panel_js").glob("*.js"):
        for name in re.findall(r"^export (?:function|const) (\w+)", part.read_text(), re.MULTILINE):
            assert name in declared, f"{part.name}: {name}"


def test_a_part_comes_after_the_parts_it_imports_and_only_once(tmp_path: Path) -> None:
    entry = parts(
        tmp_path,
        index='import { b } from "./b.js";\nimport { a } from "./a.js";\nconst x = a + b;\nexport default { x };\n',
        b='import { a } from "./a.js";\nexport const b = a;\n',
        a="export const a = 1;\n",
    )

    assert joined(entry) == "const a = 1;\n\nconst b = a;\n\nconst x = a + b;\nexport default { x };\n"


def test_parts_that_would_not_join_fail_with_one_line(tmp_path: Path) -> None:
    circle = parts(tmp_path / "circle", index='import { a } from "./a.js";\n', a='import { b } from "./index.js";\n')
    twice = parts(tmp_path / "twice", index='import { a } from "./a.js";\nconst a = 2;\n', a="export const a = 1;\n")
    default = parts(tmp_path / "default", index='import a from "./a.js";\n', a="export default 1;\n")
    second_default = parts(
        tmp_path / "second-default",
        index='import { a } from "./a.js";\nexport default { a };\n',
        a="export const a = 1;\nexport default { a };\n",
    )

    with pytest.raises(ValueError, match=r"in a circle: index.js -> a.js -> index.js$"):
        joined(circle)
    with pytest.raises(ValueError, match=r"^index.js declares a, already declared in a.js$"):
        joined(twice)
    with pytest.raises(ValueError, match=r"^index.js: an import or export the panel's join does not handle$"):
        joined(default)
    with pytest.raises(ValueError, match=r"^a.js: an import or export the panel's join does not handle$"):
        joined(second_default)
