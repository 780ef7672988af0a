"""The cost of loop constraints: one step of a robot with one and with four loops (four-bars),
against the same tree with its constraints removed, timed in the same run.

    python benchmarks/constraints_cost.py
"""

import re

from common import ROBOTS, per_call_us
from raisimcli.model import load_urdf_string
from raisimcli.physics import World


def fourbars(n: int) -> str:
    """n copies of robots/fourbar.urdf side by side in one robot (prefixed names)."""
    text = open(f"{ROBOTS}/fourbar.urdf").read()
    body = text.split('<link name="world"/>', 1)[1].rsplit("</robot>", 1)[0]
    nominal = re.search(r'nominal_config="([^"]+)"', body).group(1)
    body = re.sub(r"\s*<constraints.*?</constraints>", "", body, flags=re.S)
    parts, pins = [], []
    for k in range(n):
        b = re.sub(r'(name|link|body1|body2)="(?!world")([^"]+)"', rf'\1="f{k}_\2"', body)
        b = b.replace('<origin xyz="0 0 0"/>', f'<origin xyz="0 {2 * k} 0"/>', 1)
        b = b.replace('<origin xyz="1 0 0"/>', f'<origin xyz="1 {2 * k} 0"/>', 1)
        parts.append(b)
        pins.append(f'<pin body1="f{k}_coupler" body2="f{k}_rocker" anchor="1.2 0 0"/>')
    return ('<robot name="fourbars"><link name="world"/>' + "".join(parts) +
            f'<constraints nominal_config="{" ".join([nominal] * n)}">' + "".join(pins) +
            "</constraints></robot>")


def main():
    print(f"{'loops':>5} {'with us':>9} {'tree us':>9} {'ratio':>6}")
    for n in (1, 4):
        w = World(0.001)
        r = w.add_articulated_system(load_urdf_string(fourbars(n), path=f"{ROBOTS}/x.urdf"))
        t_with = t_tree = float("inf")
        saved = list(r.constraints)
        for _ in range(3):  # alternate, keep each one's best
            r.constraints[:] = saved
            t_with = min(t_with, per_call_us(w.integrate, repeat=1, number=500))
            r.constraints.clear()
            t_tree = min(t_tree, per_call_us(w.integrate, repeat=1, number=500))
        print(f"{n:>5} {t_with:9.1f} {t_tree:9.1f} {t_with / t_tree:6.2f}")


if __name__ == "__main__":
    main()
