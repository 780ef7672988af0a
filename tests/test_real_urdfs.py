"""Real robots' description files: every URDF of example-robot-data and of PyBullet's examples
loads, or is refused cleanly for a reason listed here; for every one that loads, our mass matrix
at a random configuration agrees with the model Pinocchio's own URDF reader makes of the file
(which also checks that our interpretations of odd files changed no dynamics).

example-robot-data installs its files under the environment's `cmeel.prefix/share` (there is no
importable module); pybullet_data ships with the pybullet wheel.
"""

import glob
import os
import sys
import zlib

import numpy as np
import pinocchio as pin
import pytest
from click.testing import CliRunner

from raisimcli.cli.main import cli
from raisimcli.errors import ModelError
from raisimcli.model import load_urdf
from raisimcli.physics import ArticulatedSystem
from raisimcli.physics.shapes import check_geometry

ERD = os.path.join(sys.prefix, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}",
                   "site-packages", "cmeel.prefix", "share", "example-robot-data", "robots")


def _pybullet_data() -> str | None:
    try:
        import pybullet_data
    except ImportError:
        return None
    return pybullet_data.getDataPath()


PYBULLET = _pybullet_data()

# path (relative to its collection) -> the words the refusal must contain. Each is broken for
# Pinocchio too, or broken in a way that would corrupt the simulation.
REFUSED = {
    # a <mimic> of a joint that the file does not have
    "alex_description/urdf/alex_psyonic_hands.urdf": "mimic joint 'index_q1' is not a joint",
    # an inertia tensor with eigenvalue -0.021 beside 0.099: no rounding error
    "romeo_description/urdf/romeo_laas_small.urdf": "not positive semi-definite",
    # a robot element holding only a comment (Pinocchio: "No name given", no links)
    "ur_description/urdf/ur3.urdf": "needs at least one <link>",
    # "0.07," is no number (urdfdom refuses it too)
    "bicycle/bike.urdf": "must be a number, got '0.07,'",
    "biped/biped2d_pybullet.urdf": "must be a number, got '-1.57.'",
    # text after the </robot> end tag
    "humanoid/humanoid.urdf": "malformed XML",
    # an unexpanded xacro expression
    "husky/husky.urdf": "must hold 3 numbers",
    # collision meshes that are not shipped
    "kuka_iiwa/model_for_sdf.urdf": "mesh file 'meshes/coarse/link_0.stl' not found",
    # rpy with four numbers
    "quadruped/microtaur/microtaur.urdf": "must hold 3 numbers, got 4",
    # a deformable body description with no <link>
    "torus_deform.urdf": "needs at least one <link>",
}


def _collect():
    out = []
    for root, label in ((ERD, "erd"), (PYBULLET, "pybullet")):
        if root is None or not os.path.isdir(root):
            continue
        for f in sorted(glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True)):
            out.append(pytest.param(f, os.path.relpath(f, root), id=f"{label}:{os.path.relpath(f, root)}"))
    return out


FILES = _collect()


def test_the_collections_are_installed():
    assert os.path.isdir(ERD), f"example-robot-data not found at {ERD} (pip install '.[test]')"
    assert PYBULLET is not None, "pybullet not installed (pip install '.[test]')"
    assert len(FILES) > 1000


def _pin_configuration(model: pin.Model, rng) -> np.ndarray:
    """A random configuration of Pinocchio's model with every free-flyer at the identity
    orientation (our floating-base velocity is in the world frame, Pinocchio's in the base frame;
    at the identity they coincide, so the two mass matrices compare entry by entry)."""
    q = pin.neutral(model)
    for j in model.joints[1:]:
        qs, nq = j.idx_q, j.nq
        name = j.shortname()
        if "FreeFlyer" in name:
            q[qs:qs + 3] = rng.uniform(-1, 1, 3)
        elif "Spherical" in name:
            v = rng.standard_normal(4)
            q[qs:qs + 4] = v / np.linalg.norm(v)
        elif nq == 2:  # unbounded revolute: (cos, sin)
            a = rng.uniform(-np.pi, np.pi)
            q[qs:qs + 2] = np.cos(a), np.sin(a)
        else:
            q[qs:qs + nq] = rng.uniform(-1.5, 1.5, nq)
    return q


def _our_configuration(pm: pin.Model, q_pin: np.ndarray, model) -> np.ndarray:
    """The same configuration in our coordinates."""
    q = model.neutral_configuration()
    for jid in range(1, pm.njoints):
        j = model.joint(pm.names[jid])
        jm = pm.joints[jid]
        qp = q_pin[jm.idx_q:jm.idx_q + jm.nq]
        s = j.q_slice.start
        if j.type == "floating":
            q[s:s + 3] = qp[:3]
            q[s + 3:s + 7] = qp[6], qp[3], qp[4], qp[5]
        elif j.type == "spherical":
            q[s:s + 4] = qp[3], qp[0], qp[1], qp[2]
        elif jm.nq == 2:
            q[s] = np.arctan2(qp[1], qp[0])
        else:
            q[s] = qp[0]
    return q


@pytest.mark.parametrize("path,rel", FILES)
def test_real_urdf_loads_and_matches_pinocchio(path, rel):
    if rel in REFUSED:
        with pytest.raises(ModelError) as err:
            load_urdf(path)
        assert REFUSED[rel] in str(err.value)
        assert f"{path}:" in str(err.value), "the message names the file and the line"
        return
    model = load_urdf(path)
    for w in model.warnings:
        assert w.code and w.message and w.file == path
    try:  # the collision shapes a run with contacts builds (coal's, meshes' hulls)
        check_geometry(model)
    except ModelError as e:  # (a mesh it cannot read): one error naming the file
        assert f"{path}:" in str(e)
    try:
        pm = pin.buildModelFromUrdf(path)
    except Exception:  # noqa: BLE001 - Pinocchio refuses it (spherical joints, ...): ours only
        return
    # Pinocchio without a root joint fixes the base, unless the file has a floating joint
    if not any("FreeFlyer" in j.shortname() for j in pm.joints[1:]):
        model = load_urdf(path, base="fixed")
    if pm.nv != model.nv or pm.nv == 0:
        assert pm.nv == model.nv, f"{rel}: Pinocchio nv {pm.nv}, ours {model.nv}"
        return
    rng = np.random.default_rng(zlib.crc32(rel.encode()))
    q_pin = _pin_configuration(pm, rng)
    M_pin = pin.crba(pm, pm.createData(), q_pin)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    system = ArticulatedSystem(model)
    system.set_generalized_coordinate(_our_configuration(pm, q_pin, model))
    M = system.get_mass_matrix()
    # Pinocchio orders the joints its own way: map its DoFs onto ours by joint name
    order = np.empty(pm.nv, dtype=int)
    for jid in range(1, pm.njoints):
        jm = pm.joints[jid]
        order[jm.idx_v:jm.idx_v + jm.nv] = np.arange(*model.joint(pm.names[jid]).u_slice.indices(model.nv))
    M_ours = M[np.ix_(order, order)]
    # a tensor projected to PSD changes M by at most 3 |lambda_min| per entry (J^T dI J with
    # rotational Jacobian entries of at most 1)
    projected = sum(-min(0.0, np.linalg.eigvalsh(_file_inertia(path, w.line)).min())
                    for w in model.warnings if w.code == "inertia-projected")
    bound = 1e-12 * np.abs(M_pin).max() + 3 * projected
    err = np.abs(M_ours - M_pin).max()
    assert err <= bound, f"{rel}: |M - M_pinocchio| = {err:.3e} > {bound:.3e}"


def _file_inertia(path: str, line: int) -> np.ndarray:
    """The inertia tensor written at `line` of the file, read with lxml alone."""
    from lxml import etree
    el = next(e for e in etree.parse(path).iter("inertia") if e.sourceline == line)
    v = {k: float(el.get(k, 0.0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    return np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                     [v["ixz"], v["iyz"], v["izz"]]])


def test_inspect_lists_the_warnings_with_their_lines_and_strict_refuses():
    path = os.path.join(ERD, "tiago_description", "robots", "tiago.urdf")
    r = CliRunner().invoke(cli, ["inspect", path, "-q"])
    assert r.exit_code == 0, r.output
    assert f"{path}:179:" in r.output and "inertia tensor is not positive semi-definite" in r.output
    # one warning, one line, however long the path: grep and editors read `file:line:` records
    lines = r.output.splitlines()
    assert lines and all(line.startswith(f"warning: {path}:") for line in lines), lines
    r = CliRunner().invoke(cli, ["inspect", path, "--json"])
    import json
    warnings = json.loads(r.output)["warnings"]
    assert {"code": "inertia-projected", "line": 179} .items() <= warnings[0].items()
    r = CliRunner().invoke(cli, ["inspect", path, "--strict"])
    assert r.exit_code == 2
    assert f"{path}:179: <inertia>:" in r.output and "--strict" in r.output
    assert "Traceback" not in r.output


def test_a_mesh_hull_with_a_vertex_on_too_many_edges_is_built_on_a_grid(tmp_path):
    # coal's Convex refuses a vertex with 255 neighbours or more; centauro's pelvis hull has one
    # on 566 edges: `inspect` crashed with coal's RuntimeError. The hull is built again from its
    # vertices snapped to a fine grid, close to the original
    import trimesh
    from raisimcli.physics.shapes import COAL_MAX_NEIGHBOURS, _fewer_neighbours, make_geometry
    path = os.path.join(ERD, "centauro_description", "urdf", "centauro.urdf")
    if os.path.exists(path):
        r = CliRunner().invoke(cli, ["inspect", path])
        assert r.exit_code == 0, r.output
    # a cone over a rim of 400 points: its apex is on 400 edges
    a = np.linspace(0.0, 2 * np.pi, 400, endpoint=False)
    points = np.vstack([np.c_[np.cos(a), np.sin(a), np.zeros(400)], [[0.0, 0.0, 1.0]]])
    hull = trimesh.Trimesh(points).convex_hull
    assert np.bincount(hull.edges_unique.ravel()).max() == 400
    fewer = _fewer_neighbours(hull, "cone")
    assert np.bincount(fewer.edges_unique.ravel()).max() <= COAL_MAX_NEIGHBOURS
    # every vertex of either hull lies within the other's face planes moved out by the grid's
    # half-diagonal (the rim's 400 points stay 400 apart on the finer grids: the coarsest one,
    # 1/100 of the extent, is needed here)
    reach = np.sqrt(3) * np.max(hull.extents) / 100 / 2 + 1e-12
    for x, y in ((hull, fewer), (fewer, hull)):
        beyond = np.einsum("pfk,fk->pf", x.vertices[:, None, :] - y.triangles[None, :, 0, :],
                           y.face_normals)
        assert beyond.max() <= reach
    stl = tmp_path / "cone.stl"
    hull.export(stl)
    geometry, radius = make_geometry("mesh", None, str(stl), (1.0, 1.0, 1.0))
    assert geometry.num_points == len(fewer.vertices) and abs(radius - 1.0) <= reach


def test_icub_s_aligned_neck_is_reported_and_a_regular_robot_needs_no_rotations(monkeypatch):
    """iCub's neck at zero (neck_roll and neck_yaw aligned, nothing of mass between them): the
    singular-mass-matrix warning names them. The quadruped's M is far from singular: LAPACK's
    screen decides it, and the Jacobi rotations are never run."""
    import raisimcli.model.pinocchio_model as pmod
    model = load_urdf(os.path.join(ERD, "icub_description", "robots", "icub.urdf"))
    found = [w for w in model.warnings if w.code == "singular-mass-matrix"]
    assert len(found) == 1 and "'neck_roll', 'neck_yaw'" in found[0].message

    def refused(M):
        raise AssertionError("the rotations ran for a regular mass matrix")
    monkeypatch.setattr(pmod, "symmetric_eigen", refused)
    from conftest import robot
    model = load_urdf(robot("quadruped.urdf"))
    assert not [w for w in model.warnings if w.code == "singular-mass-matrix"]


def test_z1_with_the_ground_at_its_second_joint_stands_still():
    """Z1's second link is a cylinder about its joint's axis; with the ground 0.5 mm above its
    lowest point, no motion of the arm lifts the points under the joint (their normal's Delassus
    entry is rounding). They get no impulse, so the arm holds its pose under PD (within the
    sag of kp = 100 against gravity: 0.0175 rad at joint4), touching the ground and at rest
    (it diverged at its second step, q = -1.5e28, when they got 1e21 N s)."""
    from raisimcli.physics import World
    w = World(0.001)
    s = w.add_articulated_system(load_urdf(os.path.join(ERD, "z1_description", "urdf",
                                                        "z1.urdf")))
    w.add_ground(0.0715)  # (the cylinder's lowest point: 0.071 m)
    s.set_pd_gains(np.full(s.nv, 100.0), np.full(s.nv, 5.0))
    s.set_pd_target(s.q.copy(), np.zeros(s.nv))
    for _ in range(200):
        w.integrate()
    assert len(w.contacts) > 0
    assert np.abs(s.q).max() < 0.02 and np.abs(s.u).max() < 1e-2


def test_talos_with_self_collision_is_refused_until_its_overlapping_pairs_are_left_out(
        tmp_path):
    """Talos's collision meshes overlap at rest (31 pairs, up to 93 mm): with self-collision it
    diverged within 2 ms. The run is refused, naming the pairs; with the line it gives pasted,
    the robot stands."""
    urdf = os.path.join(ERD, "talos_data", "robots", "talos_full_v2.urdf")
    text = f"""schema_version = 1
[world]
dt = 0.001
duration = 0.1
[world.ground]
height = -1.08
[[robot]]
name = "talos"
urdf = "{urdf}"
self_collision = true
{{}}
[robot.pd]
kp = 100.0
kd = 5.0
"""
    scn = tmp_path / "talos.toml"
    scn.write_text(text.format(""))
    r = CliRunner().invoke(cli, ["run", str(scn), "-q", "-o", str(tmp_path / "t.h5")])
    assert r.exit_code == 2
    assert "robot[0].self_collision: 31 pairs of links of robot 'talos' overlap" in r.output
    line = r.output[r.output.index("self_collision_exclude = "):].split("]], ")[0] + "]]"
    scn.write_text(text.format(line))
    r = CliRunner().invoke(cli, ["run", str(scn), "-q", "-o", str(tmp_path / "t.h5"), "--json"])
    assert r.exit_code == 0, r.output


def test_a_run_that_contacts_blow_up_says_which_links(tmp_path, monkeypatch):
    """Kinova in the air with self-collision, its 13 pairs that overlap deeply at rest left
    out but not the pair of links 4 and 6, which touch (5e-15 m in; the overlap check, turned
    off here, refuses that start): the impulse solve blows up at 0.025 s (with that pair left
    out too, the run completes). The divergence's message names the contact whose impulse was
    largest, so that the user knows where to look."""
    from raisimcli.scenario import load_scenario, runner
    monkeypatch.setattr(runner, "_check_overlaps", lambda *a: None)
    deep = [(5, "base"), (6, "base"), (3, 6), (4, "base"), (3, "base"), (1, 5), (1, 4), (2, 6),
            (2, "base"), (2, 5), (2, "finger_1"), (2, 4), (3, "finger_2")]
    pairs = [[f"j2s6s200_link_{a}", f"j2s6s200_link_{b}"] for a, b in deep]
    scn = tmp_path / "kinova.toml"
    scn.write_text(f"""schema_version = 1
[world]
dt = 0.001
duration = 0.1
[[robot]]
name = "kinova"
urdf = "{os.path.join(ERD, "kinova_description", "robots", "kinova.urdf")}"
self_collision = true
self_collision_exclude = {pairs!r}
[robot.pd]
kp = 100.0
kd = 5.0
""".replace("'", '"'))
    result = runner.run(load_scenario(str(scn), (), log_path=str(tmp_path / "k.h5")))
    assert result.status == "diverged"
    assert "; the step's contact impulses were unbounded, the largest " in result.message
    assert " N s between links 'j2s6s200_link_" in result.message
    assert "of robot 'kinova'" in result.message
