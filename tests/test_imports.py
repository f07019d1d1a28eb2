"""Imports in ``infsched`` only go downward (issue 25).

Every module under ``lib/infsched`` is parsed with :mod:`ast` (nothing is imported), and each of
its ``infsched`` imports is an arrow: module-level and function-level alike (a function-level
import that hides a circle is still an arrow up), and ``TYPE_CHECKING`` ones too. ``from pkg
import name`` is an arrow to ``pkg.name`` when that is a module, else to ``pkg`` itself.

The rule. Every module belongs to a layer, by its top-level name under ``infsched``:

0. ``infsched`` (the package itself, ``__version__``) and ``errors``;
1. the shared tools every chapter uses: ``limits``, ``des``, ``workload``, ``metrics``,
   ``optim``, ``plotting``, ``pages``, ``wording``, ``report``, ``profiles`` (profiles, the profile
   registry, raw-profile files and their fits), ``cache``, ``progress``, ``sweep``, ``store`` and ``headlines`` (the front page's claims)
   (the committed results store the sweeps read; imported by every chapter's experiments, so
   they sit below them);
2. one package per paper: ``tad``, ``ramsis``, ``kvcache``, ``kairos``, ``shepherd``; a paper's
   package never imports another paper's;
3. ``serving``, the head-to-head chapter, which runs every paper's policy on one simulator and
   so may import the paper packages;
4. the commands: ``book`` (the chapters on disk and their parameters cells), ``runner`` (with
   ``interrupts``, its Ctrl-C handling), ``params`` (the chapters' parameter checks, which read
   every chapter), ``chapters`` (``infsched sweep``: a
   chapter's experiments as one grid), ``results`` (``infsched results``: builds the store by
   running chapters), ``cli``, and ``profiling`` (the torch profiler behind
   ``infsched profile`` and the profiling chapter, which re-runs other chapters through the
   runner; nothing below it reads a profile through it: a measured profile is read through
   ``infsched.profiles``).

A module may import any module of a lower layer, and modules of its own layer only within its
own package (layer 1's modules and layer 4's are each one group), with no circle: the arrows
inside a package (or group) form a DAG. :data:`KNOWN` lists the arrows that break the rule today
in modules this work did not own, each with the reason; the test fails on any other violation,
and also when a KNOWN arrow disappears (so the list shrinks as they are fixed).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib" / "infsched"

LAYERS: dict[str, int] = {
    "infsched": 0, "errors": 0,
    "limits": 1, "des": 1, "workload": 1, "metrics": 1, "optim": 1, "plotting": 1, "pages": 1,
    "report": 1, "profiles": 1, "cache": 1, "progress": 1, "sweep": 1, "store": 1,
    "headlines": 1, "wording": 1,
    "tad": 2, "ramsis": 2, "kvcache": 2, "kairos": 2, "shepherd": 2,
    "serving": 3,
    "book": 4, "interrupts": 4, "runner": 4, "params": 4, "chapters": 4, "cli": 4, "profiling": 4,
    "results": 4,
}
#: layers whose members are one group (any member may import any other, without a circle);
#: in the other layers a group is one package
GROUPED = {0, 1, 4}

#: (importer, imported) arrows that break the rule today in modules this work did not own, with
#: the reason; every check below runs without them, and a test fails once one disappears
KNOWN: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(LIB.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def imports(name: str) -> set[str]:
    """The infsched modules ``name`` imports, anywhere in its body."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "infsched":
                    out.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if _is_package(name) else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "infsched":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.add(sub if sub in MODULES else target)
    # an import of a module that is not a file (a name inside one) is an arrow to its module
    resolved = set()
    for t in out:
        while t not in MODULES and "." in t:
            t = t.rsplit(".", 1)[0]
        resolved.add(t)
    return resolved - {name}


RAW: dict[str, set[str]] = {m: imports(m) for m in MODULES}
GRAPH: dict[str, set[str]] = {m: {t for t in ts if (m, t) not in KNOWN} for m, ts in RAW.items()}


def top(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer(name: str) -> int:
    return LAYERS.get(top(name), -1)  # -1: not placed yet (test_every_module_has_a_layer)


def group(name: str) -> str:
    return f"layer {layer(name)}" if layer(name) in GROUPED else top(name)


def test_every_module_has_a_layer():
    assert sorted({top(m) for m in MODULES} - set(LAYERS)) == []


def violations() -> dict[tuple[str, str], str]:
    bad = {}
    for m, targets in GRAPH.items():
        for t in targets:
            if layer(t) > layer(m):
                bad[(m, t)] = f"layer {layer(m)} imports layer {layer(t)}"
            elif layer(t) == layer(m) and group(t) != group(m):
                bad[(m, t)] = f"{group(m)} imports {group(t)}, a sibling of its layer"
    return bad


def test_imports_only_go_downward():
    bad = violations()
    assert bad == {}, "\n".join(f"{a} -> {b}: {why}" for (a, b), why in sorted(bad.items()))


def test_known_arrows_still_exist():
    gone = sorted(k for k in KNOWN if k[1] not in RAW.get(k[0], set()))
    assert gone == [], f"fixed: remove them from KNOWN: {gone}"


def _cycle(nodes: set[str]) -> list[str] | None:
    """A circle among ``nodes`` (arrows of :data:`GRAPH` restricted to them), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for t in sorted(GRAPH[n] & nodes):
            if state.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if t not in state:
                found = visit(t)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(nodes):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


@pytest.mark.parametrize("grp", sorted({group(m) for m in MODULES}))
def test_no_circle_within_a_package(grp):
    nodes = {m for m in MODULES if group(m) == grp}
    circle = _cycle(nodes)
    assert circle is None, " -> ".join(circle or [])


def test_whole_graph_has_no_circle():
    """The whole library's imports (without the KNOWN arrows) are a DAG."""
    circle = _cycle(set(MODULES))
    assert circle is None, " -> ".join(circle or [])
