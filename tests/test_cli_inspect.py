"""`raisimcli inspect`: every shipped robot, JSON schema, and one clear error per broken URDF."""

import json
import os
import time

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import SHIPPED, robot
from raisimcli.cli.main import cli

BASE = """<?xml version="1.0"?>
<robot name="r">
  <link name="world"/>
  <link name="a">
    <inertial><origin xyz="0 0 0.1"/><mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
  </link>
  <link name="b">
    <inertial><mass value="0.5"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <joint name="j1" type="revolute">
    <parent link="world"/><child link="a"/>
    <origin xyz="0 0 1" rpy="0 0 0"/>
    <axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="3"/>
    <dynamics damping="0.1" friction="0.2"/>
  </joint>
  <joint name="j2" type="revolute">
    <parent link="a"/><child link="b"/>
    <origin xyz="0.2 0 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="3"/>
  </joint>
  <actuator joint="j2" gear_ratio="5">
    <motor resistance="1" torque_constant="0.1" velocity_constant="10" bus_voltage="24"/>
  </actuator>
  <constraints nominal_config="0 0">
    <pin body1="a" body2="b" anchor="0.2 0 0"/>
  </constraints>
</robot>
"""


def run(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_inspect_every_shipped_robot(path):
    r = run("inspect", path)
    assert r.exit_code == 0, r.output
    js = run("inspect", path, "--json")
    assert js.exit_code == 0
    s = json.loads(js.stdout)
    assert s["schema"] == "raisimcli-inspect" and s["schema_version"] == 2
    # the human output shows the same facts
    assert f"nq = {s['nq']}" in r.output and f"nv = {s['nv']}" in r.output
    for j in s["joints"]:
        assert j["name"] in r.output
    for a in s["actuators"]:
        assert a["name"] in r.output


def test_json_schema_quadruped():
    s = json.loads(run("inspect", robot("quadruped.urdf"), "--json").stdout)
    required = {"schema": str, "schema_version": int, "file": str, "name": str, "base": str,
                "root_link": str, "nq": int, "nv": int, "total_mass": float, "moving_mass": float,
                "coordinates": list, "dofs": list, "bodies": list, "links": list, "joints": list,
                "actuators": list, "constraints": list, "warnings": list}
    for key, typ in required.items():
        assert isinstance(s[key], typ), key
    assert len(s["coordinates"]) == s["nq"] and len(s["dofs"]) == s["nv"]
    joint_keys = {"name", "type", "parent", "child", "q", "u", "axis", "origin_xyz", "lower", "upper",
                  "effort", "velocity", "damping", "friction", "rotor_inertia", "stiffness",
                  "spring_mount", "mimic"}
    assert all(set(j) == joint_keys for j in s["joints"])
    knee = [a for a in s["actuators"] if a["joint"] == "LF_KFE"][0]
    assert knee["couplings"] == [{"joint": "LF_HFE", "ratio": 9.0}]
    assert knee["motor"]["stall_torque"] == pytest.approx(19.2)
    assert knee["joint_no_load_speed"] == pytest.approx(12.5 * 48 / 9)
    assert s["joints"][0]["lower"] is None  # no limit -> null, never Infinity
    json.dumps(s, allow_nan=False)


def test_base_option_and_version():
    s = json.loads(run("inspect", robot("quadruped.urdf"), "--json", "--base", "fixed").stdout)
    assert (s["base"], s["nq"]) == ("fixed", 12)
    v = run("--version")
    assert v.exit_code == 0 and "raisimcli" in v.output
    assert run("inspect", "--help").exit_code == 0


def test_base_urdf_is_valid(tmp_path):
    p = tmp_path / "r.urdf"
    p.write_text(BASE)
    r = run("inspect", str(p))
    assert r.exit_code == 0, r.output


# (id, old, new, fragment the message must contain): BASE with `old` replaced by `new` once, or
# with each (old, new) pair of a list replaced.
BROKEN = [
    ("malformed-xml", "</robot>", "</robt>", "malformed XML"),
    ("not-a-robot", [("<robot name", "<model name"), ("</robot>", "</model>")], "expected the root element <robot>"),
    ("no-links", None, '<robot name="x"/>', "at least one <link>"),
    ("dup-link", '<link name="b">', '<link name="a">', "duplicate link name 'a'"),
    ("dup-joint", '<joint name="j2"', '<joint name="j1"', "duplicate joint name 'j1'"),
    ("missing-parent-link", '<parent link="a"/>', '<parent link="nope"/>', "parent link 'nope'"),
    ("missing-child-link", '<child link="b"/>', '<child link="zz"/>', "child link 'zz'"),
    ("missing-child-el", '<child link="b"/>', '', "missing <child link=...>"),
    ("two-roots", '<link name="b">', '<link name="orphan"/>\n  <link name="b">', "expected one root link, found 2: world, orphan"),
    ("cycle", '<parent link="world"/><child link="a"/>', '<parent link="b"/><child link="a"/>', "cycle"),
    ("two-parents", '<parent link="a"/><child link="b"/>', '<parent link="a"/><child link="a"/>', "same link"),
    ("junk-number", 'xyz="0.2 0 0"/>', 'xyz="2junk 0 0"/>', "must be a number, got '2junk'"),
    ("empty-number", 'effort="10" velocity="3"/>\n    <dynamics', 'effort="" velocity="3"/>\n    <dynamics', "attribute 'effort' must be one number, got ''"),
    ("nan-number", '<mass value="0.5"/>', '<mass value="nan"/>', "finite number"),
    ("inf-number", 'damping="0.1"', 'damping="inf"', "finite number"),
    ("short-vector", '<origin xyz="0 0 1" rpy="0 0 0"/>', '<origin xyz="0 0" rpy="0 0 0"/>', "must hold 3 numbers"),
    ("negative-mass", '<mass value="1"/>', '<mass value="-1"/>', "mass must be >= 0"),
    ("not-psd", 'ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>\n    <collision>', 'ixx="0.01" ixy="0.5" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>\n    <collision>', "not positive semi-definite"),
    ("missing-mass", '<mass value="0.5"/>', '', "missing <mass"),
    ("zero-axis", '<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>', "axis must be non-zero"),
    ("planar", 'name="j2" type="revolute"', 'name="j2" type="planar"', "not supported"),
    ("unknown-type", 'name="j2" type="revolute"', 'name="j2" type="hinge"', "unknown joint type 'hinge'"),
    ("no-type", 'name="j2" type="revolute"', 'name="j2"', "missing required attribute 'type'"),
    ("negative-effort", 'effort="10" velocity="3"/>\n    <dynamics', 'effort="-10" velocity="3"/>\n    <dynamics', "'effort' must be >= 0"),
    ("negative-damping", 'damping="0.1"', 'damping="-0.1"', "'damping' must be >= 0"),
    ("negative-rotor", 'friction="0.2"/>', 'friction="0.2" rotor_inertia="-1"/>', "'rotor_inertia' must be >= 0"),
    ("box-size", '<box size="0.1 0.1 0.1"/>', '<box size="0.1 -0.1 0.1"/>', "box size must be > 0"),
    ("sphere-radius", '<box size="0.1 0.1 0.1"/>', '<sphere radius="0"/>', "'radius' must be > 0"),
    ("missing-mesh", '<box size="0.1 0.1 0.1"/>', '<mesh filename="package://nopkg/m.stl"/>', "mesh file 'package://nopkg/m.stl' not found"),
    ("mimic-unknown", '<limit lower="-1" upper="1" effort="10" velocity="3"/>\n  </joint>', '<limit lower="-1" upper="1" effort="10" velocity="3"/>\n    <mimic joint="ghost"/>\n  </joint>', "mimic joint 'ghost' is not a joint"),
    ("mimic-self", '<limit lower="-1" upper="1" effort="10" velocity="3"/>\n  </joint>', '<limit lower="-1" upper="1" effort="10" velocity="3"/>\n    <mimic joint="j2"/>\n  </joint>', "cannot mimic itself"),
    ("mimic-cycle", [('<dynamics damping="0.1" friction="0.2"/>', '<dynamics damping="0.1" friction="0.2"/><mimic joint="j2"/>'), ('<limit lower="-1" upper="1" effort="10" velocity="3"/>\n  </joint>', '<limit lower="-1" upper="1" effort="10" velocity="3"/>\n    <mimic joint="j1"/>\n  </joint>')], "mimic joints form a cycle"),
    ("mimic-bad-multiplier", '<limit lower="-1" upper="1" effort="10" velocity="3"/>\n  </joint>', '<limit lower="-1" upper="1" effort="10" velocity="3"/>\n    <mimic joint="j1" multiplier="two"/>\n  </joint>', "'multiplier' must be a number"),
    ("actuator-unknown-joint", '<actuator joint="j2"', '<actuator joint="j9"', "actuated joint 'j9'"),
    ("actuator-no-motor", '<motor resistance="1" torque_constant="0.1" velocity_constant="10" bus_voltage="24"/>', '', "exactly one <motor>"),
    ("actuator-two-constants", 'velocity_constant="10"', 'velocity_constant="10" back_emf_constant="0.1"', "exactly one of 'velocity_constant'"),
    ("actuator-zero-resistance", 'resistance="1"', 'resistance="0"', "'resistance' must be > 0"),
    ("actuator-no-voltage", ' bus_voltage="24"', '', "missing required attribute 'bus_voltage'"),
    ("actuator-zero-gear", 'gear_ratio="5"', 'gear_ratio="0"', "'gear_ratio' must be > 0"),
    ("actuator-bad-coupling", 'bus_voltage="24"/>', 'bus_voltage="24"/><coupling joint="j7" ratio="1"/>', "coupled joint 'j7'"),
    ("actuator-self-coupling", 'bus_voltage="24"/>', 'bus_voltage="24"/><coupling joint="j2" ratio="1"/>', "its own joint"),
    ("actuator-missing-file", '<actuator joint="j2" gear_ratio="5">', '<actuator joint="j2" file="nothere.xml">', "actuator model file 'nothere.xml' not found"),
    ("actuator-peak", 'bus_voltage="24"/>', 'bus_voltage="24" peak_torque="-3"/>', "'peak_torque' must be > 0"),
    ("constraint-unknown-link", 'body2="b"', 'body2="c"', "link 'c' is not a <link>"),
    ("constraint-nominal-size", 'nominal_config="0 0"', 'nominal_config="0 0 0"', "must hold 2 numbers"),
    ("equality-three-axes", '<pin body1="a" body2="b" anchor="0.2 0 0"/>', '<equality body1="a" body2="b"><axis xyz="1 0 0"/><axis xyz="0 1 0"/><axis xyz="0 0 1"/></equality>', "one or two <axis xyz>"),
    ("equality-parallel", '<pin body1="a" body2="b" anchor="0.2 0 0"/>', '<equality body1="a" body2="b"><axis xyz="1 0 0"/><axis xyz="2 0 0"/></equality>', "parallel"),
    ("constraint-unknown-kind", '<pin body1="a" body2="b" anchor="0.2 0 0"/>', '<weld body1="a" body2="b"/>', "expected <pin> or <equality>"),
]


@pytest.mark.parametrize("case", BROKEN, ids=[c[0] for c in BROKEN])
def test_broken_urdf_exit_2_one_message(tmp_path, case):
    if len(case) == 3:
        name, pairs, fragment = case
    else:
        name, old, new, fragment = case
        pairs = [(old, new)]
    text = BASE
    for old, new in pairs:
        if old is None:
            text = new
        else:
            assert old in text, f"mutation {name} does not apply"
            text = text.replace(old, new, 1)
    p = tmp_path / "broken.urdf"
    p.write_text(text)
    r = run("inspect", str(p))
    assert r.exit_code == 2, (name, r.output)
    assert "Traceback" not in r.output
    lines = [line for line in r.output.strip().splitlines() if line.strip()]
    assert lines[0].startswith("error:") and all(str(p) in x for x in lines), r.output
    assert str(p) in lines[0]  # names the file ...
    if fragment is not None:  # ... and says what was expected
        assert fragment in lines[0], r.output
    if name not in ("malformed-xml", "no-links"):
        assert "<" in lines[0]  # names the element


def test_missing_file_and_directory(tmp_path):
    r = run("inspect", str(tmp_path / "nope.urdf"))
    assert r.exit_code == 2 and "not found" in r.output and "Traceback" not in r.output
    r = run("inspect", str(tmp_path))
    assert r.exit_code == 2


def test_external_entity_never_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-CONTENT")
    text = (f'<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY xxe SYSTEM "file://{secret}">]>'
            '<robot name="r"><link name="&xxe;"/></robot>')
    p = tmp_path / "xxe.urdf"
    p.write_text(text)
    r = run("inspect", str(p), "--json")
    assert r.exit_code == 2
    assert "TOPSECRET" not in r.output
    assert "entit" in r.output


def test_entity_bomb_refused_quickly(tmp_path):
    ents = ['<!ENTITY a0 "AAAAAAAAAA">'] + [
        f'<!ENTITY a{i} "{("&a%d;" % (i - 1)) * 10}">' for i in range(1, 10)]
    text = ('<?xml version="1.0"?><!DOCTYPE robot [' + "".join(ents) + ']>'
            '<robot name="r"><link name="&a9;"/></robot>')
    p = tmp_path / "bomb.urdf"
    p.write_text(text)
    t0 = time.perf_counter()
    r = run("inspect", str(p))
    assert r.exit_code == 2 and "entit" in r.output
    assert time.perf_counter() - t0 < 2.0


def test_actuator_file_errors_name_that_file(tmp_path):
    (tmp_path / "drive.xml").write_text('<actuator_model gear_ratio="3"><motor resistance="1" '
                                        'torque_constant="0.1" bus_voltage="24"/></actuator_model>')
    text = BASE.replace('<actuator joint="j2" gear_ratio="5">\n    <motor resistance="1" '
                        'torque_constant="0.1" velocity_constant="10" bus_voltage="24"/>',
                        '<actuator joint="j2" file="drive.xml">')
    p = tmp_path / "r.urdf"
    p.write_text(text)
    r = run("inspect", str(p))
    assert r.exit_code == 2
    assert "drive.xml" in r.output and "velocity_constant" in r.output


# files that urdfdom, Pinocchio or RaiSim read although they are odd: they load, with a warning
# naming the line and element (its code in brackets), and --strict refuses them
NO_LOOP = ('<constraints nominal_config="0 0">\n    <pin body1="a" body2="b" anchor="0.2 0 0"/>\n'
           '  </constraints>\n', '')
INTERPRETED = [
    ("zero-velocity", [('effort="10" velocity="3"/>\n  </joint>', 'effort="10" velocity="0"/>\n  </joint>')], "zero-velocity-limit", "<limit>"),
    ("zero-effort", [('effort="10" velocity="3"/>\n  </joint>', 'effort="0" velocity="3"/>\n  </joint>')], "zero-effort-limit", "<limit>"),
    ("lower-equals-upper", [('lower="-1" upper="1" effort="10" velocity="3"/>\n  </joint>', 'lower="0" upper="0" effort="10" velocity="3"/>\n  </joint>')], "empty-position-range", "<limit>"),
    ("lower-above-upper", [('lower="-1" upper="1" effort="10" velocity="3"/>\n  </joint>', 'lower="1" upper="-1" effort="10" velocity="3"/>\n  </joint>')], "inverted-position-range", "<limit>"),
    ("two-geometries", [('<box size="0.1 0.1 0.1"/>', '<box size="0.1 0.1 0.1"/><sphere radius="1"/>')], "geometry-extra-shapes", "<geometry>"),
    ("unknown-geometry", [('<box size="0.1 0.1 0.1"/>', '<cone radius="1"/>')], "collision-dropped", "<cone>"),
    ("empty-geometry", [('<box size="0.1 0.1 0.1"/>', '')], "collision-dropped", "<geometry>"),
    ("mesh-scale-four", [('<box size="0.1 0.1 0.1"/>', '<mesh filename="m.stl" scale="1 1 1 1"/>')], "collision-dropped", "<mesh>"),
    ("mimic-on-fixed", [NO_LOOP, ('name="j2" type="revolute"', 'name="j2" type="fixed"'), ('<limit lower="-1" upper="1" effort="10" velocity="3"/>\n  </joint>', '<mimic joint="j1"/>\n  </joint>'), ('<actuator joint="j2"', '<actuator joint="j1"')], "mimic-on-fixed-joint", "<mimic>"),
    ("massless-moving-body", [NO_LOOP, ('<mass value="0.5"/>\n      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>', '<mass value="0"/>\n      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>')], "massless-joint", '<joint name="j2">'),
    ("inertia-rounding", [('ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>\n  </link>', 'ixx="1e-9" ixy="2e-9" ixz="0" iyy="1e-9" iyz="0" izz="1e-9"/></inertial>\n  </link>')], "inertia-projected", "<inertia>"),
]


@pytest.mark.parametrize("case", INTERPRETED, ids=[c[0] for c in INTERPRETED])
def test_interpreted_urdf_loads_with_a_warning_and_strict_refuses_it(tmp_path, case):
    name, pairs, code, element = case
    text = BASE
    for old, new in pairs:
        assert old in text, f"mutation {name} does not apply"
        text = text.replace(old, new, 1)
    p = tmp_path / "odd.urdf"
    p.write_text(text)
    js = run("inspect", str(p), "--json")
    assert js.exit_code == 0, js.output
    warnings = [w for w in json.loads(js.stdout)["warnings"] if w["code"] == code]
    assert len(warnings) == 1, js.stdout
    w = warnings[0]
    assert w["file"] == str(p) and w["element"] == element
    line = w["line"]
    assert line is not None and element.split()[0].lstrip("<").rstrip(">") in \
        text.splitlines()[line - 1], (line, text.splitlines()[line - 1])
    r = run("inspect", str(p), "-q")
    assert r.exit_code == 0 and f"{p}:{line}: {element}:" in r.output and f"[{code}]" in r.output
    r = run("inspect", str(p), "--strict")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert f"{p}:" in r.output and f"[{code}]" in r.output and "--strict" in r.output


def test_interpretations_follow_the_urdf_conventions(tmp_path):
    """What each interpretation means for the model: no limit where the file wrote zeros or an
    empty range, the first shape of a geometry, the axis of a fixed joint not read."""
    from raisimcli.model import load_urdf_string
    text = BASE.replace('effort="10" velocity="3"/>\n  </joint>', 'effort="0" velocity="0"/>\n  </joint>', 1)
    text = text.replace('<box size="0.1 0.1 0.1"/>', '<sphere radius="0.3"/><box size="1 1 1"/>', 1)
    m = load_urdf_string(text, str(tmp_path / "x.urdf"))
    j2 = m.joint("j2")
    assert j2.effort == np.inf and j2.velocity == np.inf and (j2.lower, j2.upper) == (-1, 1)
    assert [g.kind for g in m.link("a").collisions] == ["sphere"]
    text = BASE.replace('lower="-1" upper="1" effort="10" velocity="3"/>\n  </joint>', 'lower="0.5" upper="0.5" effort="10" velocity="3"/>\n  </joint>', 1)
    j2 = load_urdf_string(text, str(tmp_path / "x.urdf")).joint("j2")
    assert (j2.lower, j2.upper) == (-np.inf, np.inf) and not j2.has_position_limits
    fixed = BASE.replace(NO_LOOP[0], "").replace('name="j2" type="revolute"', 'name="j2" type="fixed"')
    fixed = fixed.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>').replace('<actuator joint="j2"', '<actuator joint="j1"')
    m = load_urdf_string(fixed, str(tmp_path / "x.urdf"))
    assert m.nv == 1 and not [w for w in m.warnings if "axis" in w.message]


@pytest.mark.parametrize("declaration", ['<!-- generated -->\n<?xml version="1.0"?>\n',
                                         '<?xml version="0.0" ?>\n',
                                         '<?xml version="1.0"?>\n\n<?xml version="1.0"?>\n',
                                         '<?xml version="1.0" encoding="ISO-8859-1"?>\n'])
def test_odd_xml_declarations_are_read_with_the_right_lines(tmp_path, declaration):
    p = tmp_path / "decl.urdf"
    text = declaration + BASE.lstrip().replace('<mass value="-1"/>', "")
    broken = text.replace('<mass value="0.5"/>', '<mass value="-0.5"/>')
    p.write_bytes(text.encode("latin-1"))
    assert run("inspect", str(p), "-q").exit_code == 0
    p.write_bytes(broken.encode("latin-1"))
    r = run("inspect", str(p))
    line = broken.splitlines().index(next(x for x in broken.splitlines() if "-0.5" in x)) + 1
    assert r.exit_code == 2 and f"{p}:{line}: <mass>:" in r.output, r.output


def test_independent_urdf_errors_are_reported_at_once_with_suggestions(tmp_path):
    text = BASE.replace('<mass value="0.5"/>', '<mass value="-0.5"/>', 1)
    text = text.replace('<parent link="a"/><child link="b"/>', '<parent link="aa"/><child link="b"/>', 1)
    text = text.replace('name="j1" type="revolute"', 'name="j1" type="revolut"', 1)
    p = tmp_path / "three.urdf"
    p.write_text(text)
    r = run("inspect", str(p))
    assert r.exit_code == 2 and "Traceback" not in r.output
    lines = [x for x in r.output.strip().splitlines() if x.strip()]
    assert len(lines) == 3, r.output
    assert all(f"{p}:" in x for x in lines)
    assert any("mass must be >= 0" in x for x in lines)
    assert any("parent link 'aa' is not a <link> of this robot; did you mean 'a'?" in x
               for x in lines)
    assert any("unknown joint type 'revolut'" in x and "did you mean 'revolute'?" in x
               for x in lines)
