"""The house keeps one direction: imports point down the layers, and no module imports itself back.

Every import in the package is read with ``ast`` (lazy imports inside functions included),
so an arrow back up or a circle fails here before it confuses the next reader.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import monad_notebook

PACKAGE = Path(monad_notebook.__file__).parent

# Top to bottom; a module may import from its own layer's other rooms or any layer below.
LAYERS: list[set[str]] = [
    {"monad_notebook", "magics", "cli", "cell"},
    {"session", "session_setup"},
    {
        "agent",
        "approval",
        "context",
        "memory",
        "widget",
        "notebook",
        "branching",
        "demo",
        "testing",
        "safe_markdown",
        "export",
        "workspace",
        "rewind",
    },
    {"store", "redaction"},
    {"provider"},
    {
        "config",
        "config_errors",
        "config_json",
        "config_schema",
        "daemon",
        "events",
        "errors",
        "foreground",
        "messages",
        "images",
        "time_limit",
    },
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports, at the top or inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
            if submodules:
                found.update(submodules)
            elif node.module in modules:
                found.add(node.module)
    return found


@lru_cache(maxsize=1)
def graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imports_of(path, modules) - {name} for name, path in modules.items()}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer(module: str) -> int:
    return next(i for i, rooms in enumerate(LAYERS) if room(module) in rooms)


def test_every_room_has_a_layer():
    assert {room(m) for m in package_modules()} <= set().union(*LAYERS)


def test_imports_point_down_the_layers_never_back_up():
    back_up = [(a, b) for a, targets in graph().items() for b in targets if layer(b) < layer(a)]
    assert back_up == []


def test_no_stage_imports_the_session_or_the_magics():
    top = {"monad_notebook.session", "monad_notebook.magics", "monad_notebook.cli"}
    edges = graph()
    below = [m for m in edges if room(m) in {"agent", "context", "memory", "store", "widget", "provider"}]
    assert [(m, sorted(edges[m] & top)) for m in below if edges[m] & top] == []


def test_no_folder_imports_itself_back_through_others():
    """The rooms of one layer point one way too: no room reaches back to itself through another room."""
    rooms: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph().items():
        rooms[room(module)].update(room(t) for t in targets if room(t) != room(module))

    def reached(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in rooms.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    assert sorted(r for r in rooms if r in reached(r)) == []


def test_no_module_imports_itself_back_through_others():
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    assert circles == []


def test_only_the_provider_package_imports_openai_and_only_the_lance_store_imports_lancedb():
    owners: dict[str, set[str]] = defaultdict(set)
    for name, path in package_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            roots = []
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                roots = [node.module.split(".")[0]]
            for dependency in set(roots) & {"openai", "lancedb", "anywidget"}:
                owners[dependency].add(name)
    assert {room(name) for name in owners["openai"]} == {"provider"}
    assert owners["anywidget"] == {"monad_notebook.widget.panel", "monad_notebook.approval.in_cell"}
    assert owners["lancedb"] <= {
        "monad_notebook.store.lance",
        "monad_notebook.store.tables",
        "monad_notebook.store.indexes",
    }


def test_only_the_cascade_changes_the_window():
    """Stages return what they decided (an eviction plan, a durable compaction, the turn's blocks); the cascade
    alone applies it to the window, so what a step did to the window is read in one place."""
    changes = {"apply_eviction", "apply_compaction", "set_blocks"}
    callers: set[str] = set()
    for name, path in package_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in changes:
                callers.add(name)
    assert callers == {"monad_notebook.context.cascade"}
