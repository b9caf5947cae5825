"""The package's layers, as docs/layers.md draws them: every import runs down (or stays in its
layer), no module imports itself back through others, the top level stays small, and no module
name is used twice."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "playground"

# Lowest first. A module may import its own layer and the layers below it, never one above.
LAYERS = [
    ("base", ["playground.errors", "playground.space"]),
    ("decoding", ["playground.decoding"]),
    ("models", ["playground.models"]),
    ("deploy", ["playground.deploy"]),
    ("config", ["playground.config"]),
    ("methods", ["playground.methods"]),
    ("runs", ["playground.engine", "playground.run_record", "playground.family", "playground.caches",
              "playground.serving"]),
    ("measure", ["playground.measure"]),
    # The UI's own folders, lowest first: its control specs, what the page shows, the shared
    # Space (sharing), one module per tab or panel; the app's assembly at the UI's root.
    ("ui options", ["playground.ui.options"]),
    ("ui views", ["playground.ui.views"]),
    ("ui sharing", ["playground.ui.sharing"]),
    ("ui tabs", ["playground.ui.tabs"]),
    ("front", ["playground.ui", "playground.cli", "playground.__main__", "playground"]),
]
MAX_TOP_LEVEL_MODULES = 10


def module_names() -> dict[str, pathlib.Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


MODULES = module_names()


def layer_of(module: str) -> int:
    best = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS"
    return best[0]


def imports_of(module: str) -> set[str]:
    """Every module of ours that `module` imports, at the top or inside a function."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            source = ".".join(part for part in (base, node.module) if part)
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != module and target != "playground":
                found.add(target)
    return found


def test_every_import_runs_down_or_stays_in_its_layer():
    upward = [f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
              for module in MODULES for target in imports_of(module) if layer_of(target) > layer_of(module)]
    assert not upward


def test_no_import_circle():
    graph = {module: imports_of(module) for module in MODULES}
    state: dict[str, str] = {}

    def circle_from(module, trail):
        state[module] = "open"
        for target in graph[module]:
            if state.get(target) == "open":
                return trail + [module, target]
            if target not in state and (found := circle_from(target, trail + [module])):
                return found
        state[module] = "done"
        return None

    circles = [found for module in sorted(graph) if module not in state and (found := circle_from(module, []))]
    assert not circles


def test_top_level_stays_small():
    top = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem not in ("__init__", "__main__"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_module_name_is_used_twice():
    """Across the package and the experiments in bench/: one name, one module (or folder)."""
    seen: dict[str, list[str]] = {}
    for folder in (PACKAGE, ROOT / "bench"):
        for path in folder.rglob("*.py"):
            if path.stem not in ("__init__", "__main__"):
                seen.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
        for path in folder.rglob("*"):
            if path.is_dir() and (path / "__init__.py").exists() and path != folder:
                seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)) + "/")
    assert not {name: places for name, places in seen.items() if len(places) > 1}


MAX_MODULES_PER_FOLDER = 15


def test_no_folder_holds_more_than_a_reader_can_scan():
    """The UI was 42 flat modules: every folder of the package keeps at most 15."""
    crowded = {str(folder.relative_to(ROOT)): count for folder in [PACKAGE, *PACKAGE.rglob("*/")]
               if folder.is_dir() and "__pycache__" not in folder.parts
               and (count := sum(1 for p in folder.glob("*.py") if p.stem != "__init__")) > MAX_MODULES_PER_FOLDER}
    assert not crowded
