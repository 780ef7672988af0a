"""URDF -> RobotModel: shipped robots, random trees, an independent reader (urchin), Pinocchio."""

import os

import numpy as np
import pinocchio as pin
import pytest

from conftest import SHIPPED, assert_close, robot
from raisimcli.model import build_pinocchio_model, load_urdf, load_urdf_string
from urdf_gen import random_tree

# hand-counted from the files: (base, nq, nv, moving joints)
EXPECTED = {
    "pendulum.urdf": ("fixed", 1, 1, 1),
    "double_pendulum.urdf": ("fixed", 2, 2, 2),
    "cartpole.urdf": ("fixed", 2, 2, 2),
    "arm7.urdf": ("fixed", 7, 7, 7),
    "quadruped.urdf": ("floating", 19, 18, 13),
    "spring_joint.urdf": ("fixed", 1, 1, 1),
    "gripper.urdf": ("fixed", 2, 2, 2),
    "fourbar.urdf": ("fixed", 3, 3, 3),
    "spherical_chain.urdf": ("fixed", 5, 4, 2),
    "acme_s400.urdf": ("fixed", 4, 4, 4),
    "box.urdf": ("floating", 7, 6, 1),
    "parallelogram.urdf": ("fixed", 4, 4, 4),
    "fivebar_leg.urdf": ("fixed", 5, 5, 5),
}


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_shipped_robot_layout(path):
    m = load_urdf(path)
    base, nq, nv, n_moving = EXPECTED[os.path.basename(path)]
    assert (m.base, m.nq, m.nv, len(m.moving_joints)) == (base, nq, nv, n_moving)
    assert len(m.coordinate_names) == nq and len(m.dof_names) == nv
    assert m.warnings == ()
    p = build_pinocchio_model(m)
    assert (p.model.nq, p.model.nv) == (nq, nv)
    assert pin.computeTotalMass(p.model) == pytest.approx(m.moving_mass, rel=1e-14)


def test_quadruped_details():
    m = load_urdf(robot("quadruped.urdf"))
    assert m.coordinate_names[:7] == ("root.x", "root.y", "root.z", "root.qw", "root.qx",
                                      "root.qy", "root.qz")
    # depth-first, legs in file order
    assert [j.name for j in m.moving_joints][1:4] == ["LF_HAA", "LF_HFE", "LF_KFE"]
    assert m.total_mass == pytest.approx(12 + 4 * (1 + 1.2 + 0.4 + 0.05))
    knee = [a for a in m.actuators if a.joint == "LF_KFE"][0]
    assert knee.couplings == (("LF_HFE", 9.0),)
    other = [a for a in m.actuators if a.joint == "RF_KFE"][0]
    assert other.gear_ratio == 9 and other.motor.stall_torque == pytest.approx(0.08 * 48 / 0.2)
    assert other.motor.peak_torque == 4 and other.output_friction == 0.1
    # the foot is merged into the shank's body, 0.25 m below the knee
    foot = m.link("LF_foot")
    shank = m.link("LF_shank")
    assert foot.body == shank.body
    assert_close(foot.body_T_link[:3, 3], [0, 0, -0.25])


def test_world_rooted_floating_joint_and_its_override():
    text = ('<robot name="r"><link name="world"/><link name="b"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="free" type="floating"><parent link="world"/><child link="b"/></joint>'
            '</robot>')
    m = load_urdf_string(text)
    assert (m.base, m.nq, m.nv, m.joints[0].name) == ("floating", 7, 6, "free")
    m = load_urdf_string(text, base="fixed")
    assert (m.base, m.nq, m.nv) == ("fixed", 0, 0)


def test_base_override():
    m = load_urdf(robot("quadruped.urdf"), base="fixed")
    assert (m.base, m.nq, m.nv) == ("fixed", 12, 12)
    m = load_urdf(robot("arm7.urdf"), base="floating")  # world -> base is fixed: becomes floating
    assert (m.base, m.nq, m.nv) == ("floating", 14, 13)
    assert m.joints[0].name == "base_mount" and m.joints[0].type == "floating"


@pytest.mark.parametrize("seed", range(25))
def test_random_trees(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 41))
    floating = bool(seed % 2)
    text, exp = random_tree(rng, n, floating)
    m = load_urdf_string(text, path=f"random{seed}.urdf")
    assert (m.nq, m.nv) == (exp["nq"], exp["nv"])
    names = [j.name for j in m.moving_joints if j.name != "root"]
    assert names == exp["moving"]
    # slices tile q and u in order
    q = u = 0
    for j in m.moving_joints:
        assert (j.q_slice.start, j.u_slice.start) == (q, u)
        q, u = j.q_slice.stop, j.u_slice.stop
    assert (q, u) == (m.nq, m.nv)
    p = build_pinocchio_model(m)
    assert (p.model.nq, p.model.nv) == (m.nq, m.nv)
    assert pin.computeTotalMass(p.model) == pytest.approx(m.moving_mass, rel=1e-12)
    for j in m.moving_joints:
        if j.nv == 1:
            assert np.linalg.norm(j.axis) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_inspect_cli_on_random_trees(tmp_path, seed):
    import json
    from click.testing import CliRunner
    from raisimcli.cli.main import cli
    rng = np.random.default_rng(100 + seed)
    text, exp = random_tree(rng, int(rng.integers(1, 41)), bool(seed % 2))
    p = tmp_path / "random.urdf"
    p.write_text(text)
    r = CliRunner().invoke(cli, ["inspect", str(p), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert (s["nq"], s["nv"]) == (exp["nq"], exp["nv"])


# urchin reads the standard elements independently of our reader
URCHIN_ROBOTS = ["pendulum.urdf", "cartpole.urdf", "gripper.urdf", "spring_joint.urdf"]


@pytest.mark.parametrize("name", URCHIN_ROBOTS)
def test_agrees_with_urchin(name):
    urchin = pytest.importorskip("urchin")
    ref = urchin.URDF.load(robot(name), lazy_load_meshes=True)
    m = load_urdf(robot(name))
    for rj in ref.joints:
        j = m.joint(rj.name)
        assert j.type == rj.joint_type
        assert_close(j.origin, rj.origin, atol=1e-12, what=f"{rj.name} origin")
        if rj.joint_type != "fixed":
            assert_close(j.axis, rj.axis, atol=1e-12, what=f"{rj.name} axis")
        if rj.limit is not None and rj.joint_type == "prismatic":
            assert (j.lower, j.upper, j.effort, j.velocity) == (
                rj.limit.lower, rj.limit.upper, rj.limit.effort, rj.limit.velocity)
        if rj.dynamics is not None:
            assert (j.damping, j.friction) == (rj.dynamics.damping or 0.0,
                                               rj.dynamics.friction or 0.0)
        if rj.mimic is not None:
            assert (j.mimic.joint, j.mimic.multiplier, j.mimic.offset) == (
                rj.mimic.joint, rj.mimic.multiplier, rj.mimic.offset)
    text = open(robot(name)).read()
    assert sum(link.inertial is not None for link in m.links) == text.count("<inertial>")
    for rl in ref.links:
        link = m.link(rl.name)
        if link.inertial is None:  # urchin invents a default inertial for these
            continue
        R = rl.inertial.origin[:3, :3]
        assert link.inertial.mass == rl.inertial.mass
        assert_close(link.inertial.com, rl.inertial.origin[:3, 3], atol=1e-15)
        assert_close(link.inertial.inertia, R @ rl.inertial.inertia @ R.T, atol=1e-15)


def test_real_world_description_package():
    m = load_urdf(robot("acme_description/urdf/acme_s400.urdf"))
    base = m.link("base_link").collisions[0]
    assert base.kind == "mesh"
    assert base.mesh == os.path.join(os.path.dirname(robot("x")), "acme_description", "meshes",
                                     "base.stl")
    assert m.link("arm2_link").collisions[0].mesh.endswith("acme_description/meshes/arm2.stl")
    assert m.joint("joint_3").type == "prismatic" and m.joint("joint_3").upper == 0.2
    assert [a.name for a in m.actuators] == []  # ROS <transmission> is ignored
    # the link frame of tool0 carries joint_4's flip
    assert_close(m.link("tool0").body_T_link, np.eye(4))


def test_rpy_convention_matches_pinocchio():
    """URDF rpy is fixed-axis roll-pitch-yaw: R = Rz(y) Ry(p) Rx(r). Pinocchio's rpyToMatrix is an
    independent implementation of the same convention."""
    from raisimcli.model.xml import rpy_to_matrix
    rng = np.random.default_rng(3)
    for _ in range(20):
        rpy = rng.uniform(-np.pi, np.pi, 3)
        assert_close(rpy_to_matrix(rpy), pin.rpy.rpyToMatrix(*rpy), atol=1e-14)
