"""Random URDF trees for tests: every joint type, random origins and axes, and the layout we expect
counted by hand from what was generated (not from the reader)."""

import numpy as np

SIZES = {"fixed": (0, 0), "revolute": (1, 1), "continuous": (1, 1), "prismatic": (1, 1),
         "spherical": (4, 3)}


def random_tree(rng, n_links: int, floating: bool, types=tuple(SIZES)):
    """Return (urdf_text, expected) with expected = dict(nq, nv, order=[moving joint names in our
    order], coords=[...])."""
    links = [f"L{i}" for i in range(n_links)]
    parent = {}
    jtype = {}
    for i in range(1, n_links):
        parent[i] = int(rng.integers(0, i))
        jtype[i] = str(rng.choice(types))
    # shuffle the joint elements in the file, so file order differs from index order
    file_order = list(rng.permutation(list(range(1, n_links))))
    parts = ['<robot name="random">']
    if not floating:
        parts.append('<link name="world"/><joint name="anchor" type="fixed"><parent link="world"/>'
                     '<child link="L0"/></joint>')
    for i, name in enumerate(links):
        m = float(rng.uniform(0.1, 2.0))
        d = rng.uniform(0.01, 0.1, 3)
        com = rng.uniform(-0.1, 0.1, 3)
        parts.append(f'<link name="{name}"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/>'
                     f'<mass value="{m}"/><inertia ixx="{d[1] + d[2]}" iyy="{d[0] + d[2]}" '
                     f'izz="{d[0] + d[1]}" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    for i in file_order:
        xyz = rng.uniform(-0.5, 0.5, 3)
        rpy = rng.uniform(-np.pi, np.pi, 3)
        axis = rng.normal(size=3)
        t = jtype[i]
        lim = '<limit lower="-1" upper="1" effort="10" velocity="5"/>' if t in ("revolute", "prismatic") else ""
        parts.append(f'<joint name="J{i}" type="{t}"><parent link="L{parent[i]}"/><child link="L{i}"/>'
                     f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
                     f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>{lim}</joint>')
    parts.append("</robot>")

    # expected order: depth-first from L0, children in file order
    children = {}
    for i in file_order:
        children.setdefault(parent[i], []).append(i)
    order = []

    def visit(k):
        for c in children.get(k, []):
            order.append(c)
            visit(c)

    visit(0)
    nq = 7 if floating else 0
    nv = 6 if floating else 0
    moving = []
    for i in order:
        if jtype[i] != "fixed":
            moving.append(f"J{i}")
        nq += SIZES[jtype[i]][0]
        nv += SIZES[jtype[i]][1]
    return "\n".join(parts), {"nq": nq, "nv": nv, "moving": moving, "types": jtype}
