"""Where URDFs come from in practice: xacro files with arguments, meshes found through ROS 1 and
ROS 2 package conventions, symbolic links, and package.xml names."""

import os
import sys

import pytest
from click.testing import CliRunner

from raisimcli.cli.main import cli
from raisimcli.errors import ModelError
from raisimcli.model import load_urdf

XACRO = """<?xml version="1.0"?>
<robot name="arm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="length" default="0.5"/>
  <xacro:property name="L" value="$(arg length)"/>
  <link name="world"/>
  <link name="upper">
    <inertial><origin xyz="0 0 ${-L/2}"/><mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="world"/><child link="upper"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="${L * 20}" velocity="3"/>
  </joint>
</robot>
"""


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_xacro_is_expanded_with_its_arguments(tmp_path):
    p = tmp_path / "arm.urdf.xacro"
    p.write_text(XACRO)
    assert load_urdf(str(p)).joint("shoulder").effort == pytest.approx(10.0)
    assert load_urdf(str(p), xacro_args={"length": "2"}).joint("shoulder").effort == \
        pytest.approx(40.0)
    r = run("inspect", str(p), "--xacro-arg", "length:=1.5", "--json")
    assert r.exit_code == 0, r.output
    import json
    joint = next(j for j in json.loads(r.stdout)["joints"] if j["name"] == "shoulder")
    assert joint["effort"] == pytest.approx(30.0)
    r = run("inspect", str(p), "--xacro-arg", "length=1.5")
    assert r.exit_code == 2 and "NAME:=VALUE" in r.output


def test_xacro_errors_and_a_missing_xacro_package_are_one_message(tmp_path, monkeypatch):
    p = tmp_path / "bad.xacro"
    p.write_text(XACRO.replace("${-L/2}", "${-L/undefined_name}"))
    r = run("inspect", str(p))
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert str(p) in r.output and "xacro could not expand" in r.output
    monkeypatch.setitem(sys.modules, "xacro", None)  # as if it were not installed
    with pytest.raises(ModelError, match=r"pip install 'raisimcli\[xacro\]'"):
        load_urdf(str(p))


def test_a_scenario_passes_xacro_arguments(tmp_path):
    (tmp_path / "arm.urdf.xacro").write_text(XACRO)
    s = tmp_path / "s.toml"
    s.write_text('[world]\ndt = 0.001\nduration = 0.01\n\n[[robot]]\nurdf = "arm.urdf.xacro"\n'
                 'xacro_args = { length = "2" }\n')
    from raisimcli.scenario import load_scenario
    scn = load_scenario(str(s))
    assert scn.robots[0].model.joint("shoulder").effort == pytest.approx(40.0)
    r = run("run", str(s), "-q", "-o", str(tmp_path / "out.h5"))
    assert r.exit_code == 0, r.output
    s.write_text(s.read_text().replace("arm.urdf.xacro", "arm.urdf"))
    (tmp_path / "arm.urdf").write_text(XACRO)
    r = run("run", str(s), "-q", "-o", str(tmp_path / "out2.h5"))
    assert r.exit_code == 2 and "xacro_args" in r.output and not (tmp_path / "out2.h5").exists()


MESHED = """<robot name="m">
  <link name="base">
    <inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <collision><geometry><mesh filename="MESH"/></geometry></collision>
  </link>
</robot>
"""

STL = """solid t
facet normal 0 0 1
 outer loop
  vertex 0 0 0
  vertex 1 0 0
  vertex 0 1 0
 endloop
endfacet
endsolid t
"""


def _package(root, folder, name=None):
    """A description package: folder/meshes/m.stl, folder/urdf/m.urdf."""
    pkg = root / folder
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "urdf").mkdir()
    (pkg / "meshes" / "m.stl").write_text(STL)
    if name is not None:
        (pkg / "package.xml").write_text(f"<package format='3'><name>{name}</name></package>")
    return pkg


def _urdf(path, mesh):
    path.write_text(MESHED.replace("MESH", mesh))
    return str(path)


def test_package_found_by_its_package_xml_name(tmp_path):
    pkg = _package(tmp_path, "checkout-of-my_robot", name="my_robot_description")
    urdf = _urdf(pkg / "urdf" / "m.urdf", "package://my_robot_description/meshes/m.stl")
    mesh = load_urdf(urdf).link("base").collisions[0].mesh
    assert mesh == str(pkg / "meshes" / "m.stl")


def test_package_found_in_ament_prefix_path(tmp_path, monkeypatch):
    install = tmp_path / "install"
    _package(install / "share", "arm_description")
    urdf = _urdf(tmp_path / "elsewhere.urdf", "package://arm_description/meshes/m.stl")
    with pytest.raises(ModelError, match="not found"):
        load_urdf(urdf)
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path / 'nothing'}{os.pathsep}{install}")
    assert load_urdf(urdf).link("base").collisions[0].mesh == \
        str(install / "share" / "arm_description" / "meshes" / "m.stl")


def test_package_found_through_a_symlinked_urdf(tmp_path):
    pkg = _package(tmp_path / "src", "leg_description")
    real = _urdf(pkg / "urdf" / "m.urdf", "package://leg_description/meshes/m.stl")
    (tmp_path / "share").mkdir()
    link = tmp_path / "share" / "m.urdf"
    link.symlink_to(real)
    assert load_urdf(str(link)).link("base").collisions[0].mesh == \
        str(pkg / "meshes" / "m.stl")


@pytest.mark.parametrize("mesh", ["package://leg_description/../../../../etc/passwd",
                                  "package://leg_description/meshes/../../../outside.stl"])
def test_package_paths_may_not_leave_their_package(tmp_path, mesh):
    pkg = _package(tmp_path, "leg_description")
    (tmp_path / "outside.stl").write_text(STL)
    urdf = _urdf(pkg / "urdf" / "m.urdf", mesh)
    r = run("inspect", urdf)
    assert r.exit_code == 2 and f"{urdf}:4: <mesh>:" in r.output
    assert "leaves its package 'leg_description'" in r.output


def test_package_url_with_an_empty_host(tmp_path):
    pkg = _package(tmp_path, "leg_description")
    urdf = _urdf(pkg / "urdf" / "m.urdf", "package:///leg_description/meshes/m.stl")
    assert load_urdf(urdf).link("base").collisions[0].mesh == str(pkg / "meshes" / "m.stl")
