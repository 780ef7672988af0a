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
