"""`raisimcli inspect ROBOT.urdf`: what the simulator makes of a model."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from raisimcli.cli.output import emit



def warning_line(w: dict) -> str:
    """`file:line: <element>: message [code]`, the one-line form of a summary's warning."""
    where = w["file"] if w["line"] is None else f"{w['file']}:{w['line']}"
    elem = f" {w['element']}:" if w["element"] else ""
    return f"{where}:{elem} {w['message']} [{w['code']}]"


def _fmt(x, unit: str = "") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}{unit}"
    return f"{x}{unit}"


def _limits(j: dict) -> str:
    if j["type"] not in ("revolute", "prismatic") or (j["lower"] is None and j["upper"] is None):
        return "-"
    return f"[{_fmt(j['lower'])}, {_fmt(j['upper'])}]"


def render(s: dict, console: Console, warnings: Console, verbose: bool = False) -> None:
    """The summary as a tree and tables on `console`, the warnings on `warnings`. Every string
    from the file goes through `escape`: a name like `a[/]b` is text, not rich markup."""
    e = escape
    console.print(f"[bold]{e(s['name'])}[/]  {e(s['file'])}")
    console.print(f"base: [bold]{s['base']}[/]   root link: {e(s['root_link'])}   nq = {s['nq']}   "
                  f"nv = {s['nv']}   total mass: {s['total_mass']:.6g} kg "
                  f"(moving {s['moving_mass']:.6g} kg)")

    # the kinematic tree: links under the joints that carry them
    children: dict = {}
    for j in s["joints"]:
        children.setdefault(j["parent"], []).append(j)
    links = {link["name"]: link for link in s["links"]}

    def label(j):
        return (f"[cyan]{e(j['name'])}[/] {j['type']} -> [bold]{e(j['child'])}[/] "
                f"({_fmt(links[j['child']]['mass'])} kg)")

    def grow(node, link):
        for j in children.get(link, []):
            grow(node.add(label(j)), j["child"])

    if children.get(None):  # synthetic floating root joint
        root = Tree("[dim]world[/]")
        top = root.add(label(children[None][0]))
    else:
        root = top = Tree(f"[bold]{e(s['root_link'])}[/] "
                          f"({_fmt(links[s['root_link']]['mass'])} kg)")
    grow(top, s["root_link"])
    console.print(root)

    t = Table(title="joints", title_justify="left")
    for col in ("joint", "type", "q", "u", "axis", "limits", "effort", "velocity", "damping",
                "friction", "rotor", "spring", "mimic"):
        t.add_column(col, overflow="fold")
    for j in s["joints"]:
        spring = "-" if not j["stiffness"] else \
            f"{_fmt(j['stiffness'])} @ {' '.join(_fmt(x) for x in j['spring_mount'])}"
        mimic = "-" if j["mimic"] is None else \
            f"{j['mimic']['multiplier']:g} {e(j['mimic']['joint'])} + {j['mimic']['offset']:g}"
        axis = "-" if j["axis"] is None else " ".join(f"{a:.3g}" for a in j["axis"])
        t.add_row(e(j["name"]), j["type"], f"{j['q'][0]}:{j['q'][1]}", f"{j['u'][0]}:{j['u'][1]}",
                  axis, _limits(j), _fmt(j["effort"]), _fmt(j["velocity"]),
                  _fmt(j["damping"]), _fmt(j["friction"]), _fmt(j["rotor_inertia"]), spring, mimic)
    console.print(t)

    if s["actuators"]:
        t = Table(title="actuators", title_justify="left")
        for col in ("actuator", "joint", "gear", "stall torque (motor / joint)",
                    "peak torque", "no-load speed (joint)", "back-EMF b", "couplings"):
            t.add_column(col, overflow="fold")
        for a in s["actuators"]:
            m = a["motor"]
            t.add_row(e(a["name"]), e(a["joint"]), _fmt(a["gear_ratio"]),
                      f"{m['stall_torque']:.4g} / {a['joint_stall_torque']:.4g} N m",
                      _fmt(m["peak_torque"], " N m"), f"{a['joint_no_load_speed']:.4g} rad/s",
                      f"{m['back_emf_damping']:.4g} N m s",
                      ", ".join(f"{e(c['joint'])} x{c['ratio']:g}" for c in a["couplings"])
                      or "-")
        console.print(t)

    if s["constraints"]:
        t = Table(title="loop constraints", title_justify="left")
        for col in ("kind", "body1", "body2", "anchor (body1)", "axes (body1)"):
            t.add_column(col)
        for c in s["constraints"]:
            t.add_row(c["kind"], e(c["body1"]), e(c["body2"]),
                      " ".join(f"{x:.4g}" for x in c["anchor"]),
                      "; ".join(" ".join(f"{x:.3g}" for x in a) for a in c["axes"]))
        console.print(t)
        if s["nominal_config"] is not None:
            console.print("nominal config: " + " ".join(f"{x:.6g}" for x in s["nominal_config"]))

    console.print("coordinates q: " + ", ".join(e(c) for c in s["coordinates"]))
    if verbose:
        for k, body in enumerate(s["bodies"]):
            console.print(f"body {k}: " + ", ".join(e(b) for b in body))
        for f in s.get("files", []):
            console.print(f"read: {e(f)}")
    outside = [c["mesh"] for link in s["links"] for c in link["collisions"]
               if c.get("outside_model_folder")]
    for mesh in dict.fromkeys(outside):
        console.print(f"[yellow]mesh outside the model's folder:[/] {e(mesh)}")
    for w in s["warnings"]:
        warnings.print(f"[yellow]warning:[/] {e(warning_line(w))}", soft_wrap=True)
    if not s["warnings"]:
        console.print("[green]no problems found[/]")


@click.command("inspect")
@click.argument("urdf", type=click.Path(dir_okay=False))
@click.option("--base", type=click.Choice(["fixed", "floating"]), default=None,
              help="Override the base type (default: a root link named 'world' is fixed, "
                   "anything else floating).")
@click.option("--strict", is_flag=True,
              help="Treat the warnings (interpretations of the file, see docs/urdf.md) as errors.")
@click.option("--xacro-arg", "xacro_args", multiple=True, metavar="NAME:=VALUE",
              help="An argument of a .xacro file (repeatable).")
@click.option("--max-joints", type=click.IntRange(min=1), default=None,
              help="Refuse models with more moving joints (default 200).")
@click.option("-W", "--ignore-warning", "ignore", multiple=True, metavar="CODE",
              help="Do not report warnings with this code (repeatable; codes in docs/urdf.md).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the model summary as JSON on stdout (schema raisimcli-inspect v2).")
@click.option("-q", "--quiet", is_flag=True, help="Print only warnings and errors.")
@click.option("-v", "--verbose", is_flag=True,
              help="Also list the rigid bodies (merged links) and every file read.")
def inspect_command(urdf: str, base: str | None, strict: bool, xacro_args: tuple[str, ...],
                    max_joints: int | None, ignore: tuple[str, ...], as_json: bool, quiet: bool,
                    verbose: bool) -> None:
    """Show what the simulator makes of a URDF: tree, joints, limits, dynamics, actuators, loop
    constraints, coordinate layout, masses and the problems found. The report goes to stdout,
    warnings and errors to stderr."""
    from raisimcli.cli import entry
    from raisimcli.cli.main import report_errors, stderr, stdout
    from raisimcli.errors import ModelError
    from raisimcli.model import load_urdf  # heavy: load on use
    from raisimcli.model.summary import summarize
    from raisimcli.physics.shapes import check_geometry
    entry.QUICK_EXIT = True  # (no user code runs here: entry's docstring)

    @report_errors(json_output=as_json)
    def go():
        args = {}
        for a in xacro_args:
            name, sep, value = a.partition(":=")
            if not sep or not name:
                raise ModelError(f"--xacro-arg expects NAME:=VALUE, got {a!r}", file=urdf)
            args[name] = value
        # the reader also builds the dynamics, and the collision shapes are built as a run with
        # contacts builds them: what run would refuse is refused here
        model = load_urdf(urdf, base=base, strict=strict, xacro_args=args or None,
                          ignore_warnings=ignore,
                          **({"max_joints": max_joints} if max_joints else {}))
        check_geometry(model)
        s = summarize(model)
        if as_json:
            emit(json.dumps(s, indent=2))
        elif quiet:
            for w in s["warnings"]:
                stderr.print(f"[yellow]warning:[/] {escape(warning_line(w))}", soft_wrap=True)
        else:
            render(s, stdout, stderr, verbose)

    go()
