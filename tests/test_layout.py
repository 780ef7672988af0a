"""The package's layout rules that code review would otherwise have to remember."""

import ast
import pathlib

PHYSICS = pathlib.Path(__file__).resolve().parent.parent / "raisimcli" / "physics"


def test_the_step_reads_other_objects_only_through_their_public_members():
    """Contacts, collision, constraints, inverse dynamics, the world, the state records and the
    step's stages use a system's kinematics adapter and each other's public methods: no module
    under raisimcli/physics reads or writes a private member (a name with one leading
    underscore) of anything but `self` or `cls`."""
    found = []
    for path in sorted(PHYSICS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and \
                    not node.attr.startswith("__") and \
                    not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{path.relative_to(PHYSICS.parent)}:{node.lineno}: "
                             f"{ast.unparse(node)}")
    assert not found, "\n".join(found)


def _imports(path: pathlib.Path, modules: set) -> set:
    """The package modules that `path` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n in modules}
    return found


def test_no_import_circle_in_physics():
    """The modules under raisimcli/physics import each other without a circle (counting the
    imports made inside functions): each can be read, and tested, on top of the ones below it."""
    package = PHYSICS.parent.parent
    paths = {".".join(p.relative_to(package).with_suffix("").parts): p
             for p in PHYSICS.rglob("*.py") if p.name != "__init__.py"}
    graph = {m: _imports(p, set(paths)) - {m} for m, p in paths.items()}
    done, on_path, circles = set(), [], []

    def visit(m):
        if m in on_path:
            circles.append(on_path[on_path.index(m):] + [m])
            return
        if m in done:
            return
        on_path.append(m)
        for d in sorted(graph[m]):
            visit(d)
        on_path.pop()
        done.add(m)
    for m in sorted(graph):
        visit(m)
    assert not circles, "\n".join(" -> ".join(c) for c in circles)
