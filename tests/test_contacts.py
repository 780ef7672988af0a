"""Contacts against analytic results: resting, sliding, an incline, bounces, the cone, momentum,
a standing quadruped, and inverse dynamics with contact loads."""

import math

import numpy as np
import pytest

from conftest import assert_close, robot
from newton_euler import body_momenta, check_newton_euler
from raisimcli.model import load_urdf, load_urdf_string
from raisimcli.physics import World
from raisimcli.physics.step.explicit import make_stage

G = 9.81


def box_urdf(mass=2.0, size=(0.2, 0.2, 0.2), shape="box"):
    a, b, c = size
    geom = f'<box size="{a} {b} {c}"/>' if shape == "box" else f'<sphere radius="{a}"/>'
    I = (mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12) \
        if shape == "box" else (0.4 * mass * a * a,) * 3
    return (f'<robot name="{shape}"><link name="body"><inertial><mass value="{mass}"/>'
            f'<inertia ixx="{I[0]}" iyy="{I[1]}" izz="{I[2]}" ixy="0" ixz="0" iyz="0"/>'
            f'</inertial><collision><geometry>{geom}</geometry></collision></link></robot>')


def world_with_box(dt=0.001, z=0.1, friction=0.8, restitution=0.0, shape="box", size=(0.2,) * 3,
                   mass=2.0, name=None):
    w = World(dt)
    w.add_ground(0.0)
    w.set_default_material(friction, restitution)
    r = w.add_articulated_system(load_urdf_string(box_urdf(mass, size, shape)), name=name)
    q = r.get_generalized_coordinate()
    q[2] = z
    r.set_state(q, np.zeros(6))
    return w, r


def test_box_rests_without_drift_or_jitter():
    w, r = world_with_box()
    z = []
    for k in range(10_000):  # 10 s
        w.integrate()
        if k > 100:
            z.append(r.q[2])
        normal = sum(c.impulse[2] for c in w.contacts) / w.dt
    assert np.abs(r.q[:3] - [0, 0, 0.1]).max() < 1e-6
    assert np.ptp(z) < 1e-9                                   # no jitter
    assert normal == pytest.approx(2.0 * G, rel=1e-6)
    assert np.abs(r.u).max() < 1e-9


def test_sliding_block_stops_after_v0_squared_over_2_mu_g():
    mu, v0 = 0.5, 2.0
    w, r = world_with_box(friction=mu, dt=0.0005)
    for _ in range(50):  # settle
        w.integrate()
    q = r.get_generalized_coordinate()
    u = np.zeros(6)
    u[0] = v0
    r.set_state(q, u)
    x0 = r.q[0]
    for _ in range(4000):
        w.integrate()
        if r.u[0] <= 1e-9:
            break
    distance = r.q[0] - x0
    assert distance == pytest.approx(v0 ** 2 / (2 * mu * G), rel=5e-3)
    assert abs(r.q[1]) < 1e-9                                  # no sideways drift
    for _ in range(200):
        w.integrate()
    assert abs(r.u[0]) < 1e-9                                  # stays stopped


def incline_world(theta, mu, dt=0.0005):
    w = World(dt)
    w.set_default_material(mu)
    # a wide slab as the incline: its top face through the origin, tilted by theta about y
    R = np.array([[math.cos(theta), 0, math.sin(theta)], [0, 1, 0],
                  [-math.sin(theta), 0, math.cos(theta)]])
    w.add_box("incline", [10.0, 2.0, 1.0], position=R @ np.array([0, 0, -0.5]),
              rpy=(0.0, theta, 0.0))
    r = w.add_articulated_system(load_urdf_string(box_urdf()))
    q = r.get_generalized_coordinate()
    q[:3] = R @ np.array([0.0, 0.0, 0.1])
    half = theta / 2
    q[3:7] = [math.cos(half), 0, math.sin(half), 0]
    r.set_state(q, np.zeros(6))
    return w, r, R


@pytest.mark.parametrize("theta,mu", [(0.3, 0.5), (0.45, 0.5), (0.5, 0.3)])
def test_incline_sticks_or_slides(theta, mu):
    w, r, R = incline_world(theta, mu)
    for _ in range(200):
        w.integrate()
    s0 = (R.T @ r.q[:3])[0]
    v_start = (R.T @ r.u[:3])[0]
    T = 0.5
    for _ in range(int(T / w.dt)):
        w.integrate()
    along = R.T @ r.q[:3]
    v = (R.T @ r.u[:3])[0]
    if math.tan(theta) < mu:
        assert abs(along[0] - s0) < 1e-6 and abs(v) < 1e-6     # sticks
    else:
        a = G * (math.sin(theta) - mu * math.cos(theta))  # Ry(theta) turns x down the slope
        assert (v - v_start) / T == pytest.approx(a, rel=5e-3)


@pytest.mark.parametrize("e", [0.0, 0.5, 0.8])
def test_drop_bounce_height(e):
    h0, r_ball = 0.5, 0.05
    w, r = world_with_box(dt=0.0002, z=h0 + r_ball, restitution=e, shape="sphere",
                          size=(r_ball, 0, 0), mass=1.0)
    z, vz, energy = [], [], []
    for _ in range(int(1.0 / w.dt)):
        w.integrate()
        z.append(r.q[2] - r_ball)
        vz.append(r.u[2])
        energy.append(r.get_kinetic_energy() + r.get_potential_energy())
    z, vz, energy = np.array(z), np.array(vz), np.array(energy)
    impact = int(np.argmax(vz >= 0))          # the first step that stops the fall
    assert 0 < impact and z[impact] < 2 * w.dt * abs(vz[impact - 1])  # at the ground
    after = z[impact:]
    if e == 0:
        assert after.max() - after.min() < 1e-6 and after.min() > -1e-6   # no bounce
    else:
        assert after.max() == pytest.approx(e * e * h0, rel=0.02)
    assert np.all(np.diff(energy) <= 1e-9 * abs(energy[0]))    # the energy never rises


def test_impulses_in_their_cones_and_separating_contacts_carry_nothing():
    w = World(0.001)
    w.add_ground(0.0)
    r = w.add_articulated_system(load_urdf(robot("quadruped.urdf")))
    q = r.get_generalized_coordinate()
    q[2] = 0.55
    q[7:] = [0.1, 0.6, -1.2, -0.1, 0.6, -1.2, 0.1, -0.6, 1.2, -0.1, -0.6, 1.2][:12]
    r.set_state(q, np.random.default_rng(0).normal(size=18) * 0.5)
    r.set_pd_gains(np.full(18, 80.0), np.full(18, 2.0))
    r.set_pd_target(q, np.zeros(18))
    pushing = separating = sliding = 0
    for _ in range(600):
        w.integrate()
        for c in w.contacts:
            lt, ln = c.impulse_contact[:2], c.impulse_contact[2]
            v = c.velocity_contact
            assert ln >= -1e-12
            assert np.linalg.norm(lt) <= c.mu * ln * (1 + 1e-9) + 1e-12
            # to the solver's convergence (iterated to 1e-12 per sweep, at most 200 sweeps):
            assert v[2] >= c.target - 1e-6                 # no contact closes beyond its target
            if v[2] > c.target + 1e-6:                     # separating: it carries nothing
                assert np.abs(c.impulse_contact).max() < 1e-12
                separating += 1
            elif ln > 1e-9:
                pushing += 1
                if np.linalg.norm(v[:2]) > 1e-6:           # sliding: on the cone, opposing
                    assert np.linalg.norm(lt) == pytest.approx(c.mu * ln, rel=1e-6)
                    assert lt @ v[:2] < 0
                    sliding += 1
    assert pushing > 0 and separating > 0


def test_two_free_bodies_colliding_conserve_momentum():
    w = World(0.001, gravity=(0, 0, 0))
    a = w.add_articulated_system(load_urdf_string(box_urdf(1.0, (0.1, 0, 0), "sphere")), name="a")
    b = w.add_articulated_system(load_urdf_string(box_urdf(3.0, (0.1, 0, 0), "sphere")), name="b")
    qa, qb = a.get_generalized_coordinate(), b.get_generalized_coordinate()
    qa[:3] = [-0.3, 0.01, 0.0]
    qb[:3] = [0.3, 0.0, 0.0]
    ua, ub = np.zeros(6), np.zeros(6)
    ua[0], ub[0] = 2.0, -0.5
    a.set_state(qa, ua)
    b.set_state(qb, ub)
    P0 = a.get_linear_momentum() + b.get_linear_momentum()
    touched = False
    for _ in range(500):
        w.integrate()
        for c in w.contacts:
            if np.any(c.impulse):
                touched = True
                on_a = c.impulse if c.system_a is a else -c.impulse
                assert np.any(on_a)
        assert_close(a.get_linear_momentum() + b.get_linear_momentum(), P0, rtol=1e-10,
                     atol=1e-10)
    assert touched and a.u[0] < 2.0 and b.u[0] > -0.5


def test_robots_that_do_not_touch_are_independent_islands():
    """Two robots apart on one ground step exactly as each alone in its own world: their impulse
    problems are solved apart (one problem for both would iterate each until the other one has
    converged too, and its cost would grow with the square of the number of robots)."""
    def dropped(w, name, x, mass, tilt):
        s = w.add_articulated_system(load_urdf_string(box_urdf(mass, (0.1, 0.2, 0.1))),
                                     name=name)
        q = s.get_generalized_coordinate()
        q[:3] = [x, 0.0, 0.3]
        q[3:7] = [math.cos(tilt / 2), math.sin(tilt / 2) * 0.6, math.sin(tilt / 2) * 0.8, 0.0]
        u = np.zeros(6)
        u[3:] = [1.0, -2.0, 0.5]  # lands on an edge or a corner, then rocks
        s.set_state(q, u)
        return s

    setups = (("a", 0.0, 1.0, 0.4), ("b", 5.0, 4.0, 1.1))
    together = World(0.001)
    together.add_ground()
    pair = [dropped(together, *args) for args in setups]
    alone = []
    for args in setups:
        w = World(0.001)
        w.add_ground()
        alone.append((w, dropped(w, *args)))
    iterations_differ = False
    for _ in range(600):
        together.integrate()
        for w, s in alone:
            w.integrate()
        for s, (_, ref) in zip(pair, alone):
            assert s.q.tobytes() == ref.q.tobytes() and s.u.tobytes() == ref.u.tobytes()
        iterations_differ |= alone[0][1].solver_iterations != alone[1][1].solver_iterations
    assert iterations_differ  # the two problems did converge at different sweeps
    assert len(together.contacts) == sum(len(w.contacts) for w, _ in alone) > 0


def test_islands_whose_contacts_interleave_step_as_their_own_worlds():
    """Robot c lies between a and b in the world's order, so the island of a and b (they
    collide while rolling on the ground) has contacts 0, 2 and 3 (a's and b's with the ground,
    then theirs) and c's island contact 1: each island steps, and its contacts get the results,
    exactly as in a world of its own."""
    def ball(w, name, x, vx):
        s = w.add_articulated_system(load_urdf_string(box_urdf(1.0, (0.1, 0, 0), "sphere")),
                                     name=name)
        q = s.get_generalized_coordinate()
        q[:3] = [x, 0.0, 0.1]
        u = np.zeros(6)
        u[0] = vx
        s.set_state(q, u)
        return s

    balls = {"a": (-0.3, 2.0), "c": (5.0, 0.0), "b": (0.3, -0.5)}
    worlds = {}
    for names in ("acb", "ab", "c"):
        w = World(0.001)
        w.add_ground()
        worlds[names] = (w, {n: ball(w, n, *balls[n]) for n in names})
    (w3, all3), (wp, pair), (wc, lone) = worlds["acb"], worlds["ab"], worlds["c"]
    touched = False
    for _ in range(300):
        for w, _ in worlds.values():
            w.integrate()
        for name, s in all3.items():
            ref = (lone if name == "c" else pair)[name]
            assert s.q.tobytes() == ref.q.tobytes() and s.u.tobytes() == ref.u.tobytes()
        by_key = {c.key: c for w in (wp, wc) for c in w.contacts}
        assert len(w3.contacts) == len(by_key)
        for c in w3.contacts:
            assert c.impulse.tobytes() == by_key[c.key].impulse.tobytes()
            assert c.velocity_contact.tobytes() == by_key[c.key].velocity_contact.tobytes()
        touched |= len(wp.contacts) == 3
    assert touched  # a and b did collide (with both on the ground)


def test_two_quadrupeds_apart_step_as_each_alone_joint_rows_included():
    """Robots of the same URDF have joints of the same names: the warm start of one robot's
    joint rows (friction, limits) must be its own impulses, never the other robot's, so that
    each of two quadrupeds apart steps exactly as it does alone."""
    def quadruped(w, name, x, legs):
        s = w.add_articulated_system(robot("quadruped.urdf"), name=name)
        q = s.get_generalized_coordinate()
        q[0], q[2], q[7:] = x, 0.6, legs
        s.set_state(q, np.zeros(18))
        s.set_pd_gains(np.full(18, 300.0), np.full(18, 10.0))
        s.set_pd_target(q, np.zeros(18))
        return s

    legs = (np.array([0.0, 0.6, -1.2] * 2 + [0.0, -0.6, 1.2] * 2),
            np.array([0.1, 0.8, -1.5] * 2 + [-0.1, -0.4, 1.0] * 2))
    together = World(0.001)
    together.add_ground()
    pair = [quadruped(together, f"q{k}", 2.0 * k, legs[k]) for k in range(2)]
    alone = []
    for k in range(2):
        w = World(0.001)
        w.add_ground()
        alone.append((w, quadruped(w, f"q{k}", 2.0 * k, legs[k])))
    for _ in range(400):  # the fall, the landing, standing
        together.integrate()
        for w, _ in alone:
            w.integrate()
        for s, (_, ref) in zip(pair, alone):
            assert s.q.tobytes() == ref.q.tobytes() and s.u.tobytes() == ref.u.tobytes()
        touching = [len(w.contacts) for w, _ in alone]
        assert len(together.contacts) == sum(touching)
    assert all(touching)  # both landed (and their joint rows acted all along)
    assert all(ref.joint_rows.rows(ref.q, ref.u, 0.001).m for _, ref in alone)


def test_quadruped_stands_under_pd():
    w = World(0.001)
    w.add_ground(0.0)
    r = w.add_articulated_system(load_urdf(robot("quadruped.urdf")))
    stand = r.get_generalized_coordinate()
    stand[7:] = [0.0, 0.6, -1.2, 0.0, 0.6, -1.2, 0.0, -0.6, 1.2, 0.0, -0.6, 1.2]
    # the feet's height at this pose sets the base height: put the feet on the ground
    r.set_state(stand, np.zeros(18))
    foot_z = min(r.get_frame_position(f"{leg}_foot")[2] for leg in ("LF", "RF", "LH", "RH"))
    stand[2] += -foot_z + 0.03
    r.set_state(stand, np.zeros(18))
    r.set_pd_gains(np.full(18, 300.0), np.full(18, 10.0))
    r.set_pd_target(stand, np.zeros(18))
    for _ in range(3000):  # settle 3 s
        w.integrate()
    base0 = r.q[:3].copy()
    pen = 0.0
    for _ in range(10_000):  # 10 s
        w.integrate()
        pen = max(pen, max((c.penetration for c in w.contacts), default=0.0))
    normal = sum(c.impulse[2] for c in w.contacts) / w.dt
    assert normal == pytest.approx(r.model.total_mass * G, rel=1e-3)
    assert np.linalg.norm(r.q[:3] - base0) < 1e-3
    assert pen < 1e-3


def test_inverse_dynamics_with_contacts_root_carries_nothing():
    w, r = world_with_box()
    r.set_compute_inverse_dynamics(True)
    for _ in range(100):
        w.integrate()
    assert np.abs(r.get_force_at_joint_in_world_frame("root")).max() < 1e-9
    assert np.abs(r.get_torque_at_joint_in_world_frame("root")).max() < 1e-9
    assert r.torque["contacts"][2] == pytest.approx(2.0 * G, rel=1e-9)


def test_pd_mode_replaces_euler_after_first_contact():
    w, r = world_with_box(z=0.3)
    r.set_integration_scheme("EULER")
    r.set_pd_gains(np.zeros(6), np.zeros(6))   # PD mode (the base gains are zero anyway)
    assert r.effective_scheme() == "EULER"
    while not any(np.any(c.impulse) for c in w.contacts):
        w.integrate()
    assert r.effective_scheme() == "SEMI_IMPLICIT"   # from the step after the first contact
    r.set_state(r.q, r.u)                            # until the state is set again
    assert r.effective_scheme() == "EULER"
    r.set_control_mode("FORCE_AND_TORQUE")
    w.integrate()
    assert r.effective_scheme() == "EULER"           # the rule is for the PD mode only


def test_newton_euler_of_the_standing_quadruped_with_contact_forces():
    """Settle the quadruped on the ground, then one step of 1e-7 s with inverse dynamics: the root
    carries nothing, and every body's wrenches (joints, gravity, contact forces) balance its rate
    of change of momentum from finite differences."""
    w = World(0.001)
    w.add_ground(0.0)
    r = w.add_articulated_system(load_urdf(robot("quadruped.urdf")))
    q = r.get_generalized_coordinate()
    q[2], q[7:] = 0.4485, [0.0, 0.6, -1.2] * 2 + [0.0, -0.6, 1.2] * 2
    r.set_state(q, np.zeros(18))
    r.set_pd_gains(np.full(18, 300.0), np.full(18, 10.0))
    r.set_pd_target(q, np.zeros(18))
    for _ in range(1000):
        w.integrate()
    w.set_time_step(1e-7)
    r.set_compute_inverse_dynamics(True)
    m = r.model
    links = {link.name: link for link in m.links}
    before = body_momenta(r)
    joint_pos = {j.name: r.get_frame_position(j.child) for j in m.joints}
    w.integrate()
    assert len(w.contacts) == 4 and all(c.impulse[2] > 0 for c in w.contacts)
    assert np.abs(r.get_force_at_joint_in_world_frame("root")).max() < 1e-6
    assert np.abs(r.get_torque_at_joint_in_world_frame("root")).max() < 1e-6

    def contact_loads(b, com):
        F, T = np.zeros(3), np.zeros(3)
        for c in w.contacts:
            if links[c.link_a].body == b:
                f = c.impulse / w.dt
                F, T = F + f, T + np.cross(c.position - com, f)
        return F, T

    check_newton_euler(r, before, body_momenta(r), w.dt, joint_pos, [0, 0, -G], contact_loads)


def test_contacts_in_the_log(tmp_path):
    import h5py
    from click.testing import CliRunner
    from conftest import SCENARIOS
    from raisimcli.cli.main import cli
    out = tmp_path / "o.h5"
    r = CliRunner().invoke(cli, ["run", f"{SCENARIOS}/quadruped_stand.toml", "-q", "-o",
                                 str(out), "--duration", "0.5"])
    assert r.exit_code == 0, r.output
    with h5py.File(out) as f:
        g = f["contacts"]
        count, start = g["count"][()], g["start"][()]
        assert count.shape == (500,) and count[-1] == 4
        assert start[-1] + count[-1] == g["position"].shape[0]
        names = [n.decode() for n in g["body_names"][()]]
        last = slice(start[-1], start[-1] + count[-1])
        feet = sorted(names[i] for i in g["body_a"][last])
        assert feet == sorted(f"quadruped/{leg}_foot" for leg in ("LF", "LH", "RF", "RH"))
        assert {names[i] for i in g["body_b"][last]} == {"ground"}
        weight = 22.6 * G
        assert g["force"][last][:, 2].sum() == pytest.approx(weight, rel=1e-3)
        assert_close(g["force"][last], g["impulse_world"][last] / 0.001, rtol=1e-12)
        tau = f["robots/quadruped/torque/contacts"][-1]
        assert tau[2] == pytest.approx(weight, rel=1e-3)      # vertical: the contacts hold it up


def _fingers_urdf():
    def finger(name, y, axis):
        return (f'<joint name="{name}_slide" type="prismatic"><parent link="base"/>'
                f'<child link="{name}"/><origin xyz="0 {y} 0"/><axis xyz="0 {axis} 0"/></joint>'
                f'<link name="{name}"><inertial><mass value="0.2"/><inertia ixx="1e-4" iyy="1e-4" '
                f'izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry>'
                f'<box size="0.02 0.02 0.05"/></geometry></collision></link>')
    return ('<robot name="pinch"><link name="world"/><joint name="mount" type="fixed">'
            '<parent link="world"/><child link="base"/></joint><link name="base"><inertial>'
            '<mass value="1"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/>'
            '</inertial></link>' + finger("left", 0.1, -1) + finger("right", -0.1, 1) +
            "</robot>")


@pytest.mark.parametrize("self_collision", [True, False])
def test_self_collision_is_opt_in(self_collision):
    """Two fingers pushed toward each other: with self-collision they stop at touching (their
    1 cm half-widths), without it they pass through each other."""
    w = World(0.001, gravity=(0, 0, 0))
    r = w.add_articulated_system(load_urdf_string(_fingers_urdf()))
    w.configure_contacts(r, self_collision=self_collision)
    r.set_generalized_force([1.0, 1.0])
    for _ in range(1500):
        w.integrate()
    gap = (0.1 - r.q[0]) - (-0.1 + r.q[1])  # distance between the finger centres
    if self_collision:
        assert gap == pytest.approx(0.02, abs=1e-5)
        assert np.abs(r.u).max() < 1e-6
        assert r.torque["contacts"] == pytest.approx([-1.0, -1.0], rel=1e-6)
    else:
        assert gap < 0.0


def _mesh_body_settled(mesh: str, inertia, z: float, origin_z: float = 0.0):
    """(world, robot): a free 1 kg body whose collision is `mesh` (its origin at origin_z in
    the body frame), released at height z above the ground and stepped 1 s."""
    ixx, iyy, izz = inertia
    text = (f'<robot name="meshed"><link name="b"><inertial><mass value="1"/><inertia '
            f'ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>'
            f'<collision><origin xyz="0 0 {origin_z}"/><geometry><mesh filename="{mesh}"/>'
            f'</geometry></collision></link></robot>')
    w = World(0.001)
    w.add_ground(0.0)
    r = w.add_articulated_system(load_urdf_string(text))
    q = r.get_generalized_coordinate()
    q[2] = z
    r.set_state(q, np.zeros(6))
    for _ in range(1000):
        w.integrate()
    return w, r


def test_a_mesh_collides_as_its_convex_hull(tmp_path):
    """A floating body whose collision shape is an STL box mesh (0.35 x 0.08 x 0.06 m) rests on
    the ground on its broad face: its origin settles 3 cm up, on four corner contacts."""
    w, r = _mesh_body_settled(robot("acme_description/meshes/arm1.stl"), (0.001, 0.01, 0.01),
                              0.05, origin_z=-0.03)
    assert r.q[2] == pytest.approx(0.03, abs=1e-6)
    assert len(w.contacts) == 4
    assert sum(c.impulse[2] for c in w.contacts) / w.dt == pytest.approx(G, rel=1e-6)


def test_material_pair_of_the_block_slide_scenario(tmp_path):
    """scenarios/block_slide.toml: floor/steel friction 0.5 from a [[world.material_pair]], the
    block launched at 2 m/s stops after v0^2 / (2 mu g)."""
    import h5py
    from click.testing import CliRunner
    from conftest import SCENARIOS
    from raisimcli.cli.main import cli
    out = tmp_path / "s.h5"
    res = CliRunner().invoke(cli, ["run", f"{SCENARIOS}/block_slide.toml", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    with h5py.File(out) as f:
        x = f["robots/block/q"][:, 0]
        assert x[-1] - f["robots/block/initial_q"][0] == pytest.approx(4.0 / (2 * 0.5 * G),
                                                                       rel=5e-3)


# ------------------------------------------------------------------------------------------------
# detection: what is skipped before coal, and the contact frame
# ------------------------------------------------------------------------------------------------
def _random_rotation(rng):
    import pinocchio as pin
    return pin.Quaternion(rng.standard_normal(4) / 2).normalized().matrix()


@pytest.mark.parametrize("kind, size", [("sphere", (0.07,)), ("capsule", (0.05, 0.3)),
                                        ("cylinder", (0.06, 0.25)), ("box", (0.3, 0.2, 0.1))])
def test_the_lowest_point_filter_keeps_every_ground_contact_coal_reports(kind, size):
    # a shape is given to coal for the ground only if its lowest point is within the margin: the
    # lowest point against the lowest of many points of the shape's surface, and the skip
    # decision against coal's own answer, at 400 random poses around the ground
    import coal
    from raisimcli.physics.robot_shapes import RobotShapes
    from raisimcli.physics.shapes import make_geometry, Shape, transform
    from raisimcli.physics.contact_set import DEFAULT_MARGIN

    class Still:  # a system whose only body is at the world origin
        name = "still"

        def body_placements(self):
            return np.eye(3)[None].repeat(2, 0), np.zeros((2, 3))

    geom, radius = make_geometry(kind, size)
    rng = np.random.default_rng(11)
    ground, request = coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0), coal.CollisionRequest()
    request.security_margin = DEFAULT_MARGIN
    # points on the surface, in the shape's frame
    u = rng.standard_normal((4000, 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    if kind == "sphere":
        surface = size[0] * u
    elif kind == "capsule":
        ends = np.where(u[:, 2:] > 0, 0.5 * size[1], -0.5 * size[1])
        surface = size[0] * u + ends * np.array([0, 0, 1.0])
    elif kind == "cylinder":
        a = rng.uniform(0, 2 * np.pi, 4000)
        surface = np.column_stack([size[0] * np.cos(a), size[0] * np.sin(a),
                                   rng.choice([-0.5, 0.5], 4000) * size[1]])
    else:
        surface = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        surface = surface * 0.5 * np.array(size)
    skipped = touching = 0
    for _ in range(400):
        P = np.eye(4)
        P[:3, :3] = _random_rotation(rng)
        P[:3, 3] = [0.1, -0.2, rng.uniform(-0.05, radius + 0.05)]
        rs = RobotShapes(Still(), [Shape(geom, kind, "link", 1, P, radius)])
        rs.update()
        assert np.array_equal(rs.poses[0], P)
        sampled = (surface @ P[:3, :3].T + P[:3, 3])[:, 2].min()
        assert rs.lowest[0] <= sampled + 1e-12
        assert sampled - rs.lowest[0] < (1e-12 if kind == "box" else 2e-3)  # a box: exact
        reported = coal.collide(geom, transform(P), ground, coal.Transform3s(), request,
                                coal.CollisionResult())
        if rs.lowest[0] > DEFAULT_MARGIN + 1e-9:
            skipped += 1
            assert not reported
        touching += bool(reported)
    assert skipped > 40 and touching > 40  # both sides of the decision were seen


def test_a_meshs_lowest_point_is_its_lowest_vertex_whatever_the_walk(tmp_path):
    # a convex mesh's lowest point is found by walking down its hull's edges from the vertex the
    # last walk ended on: against the lowest of all its vertices, at 500 random poses of one
    # robot in a row (each walk starts where the last one ended) and at every pose from a fresh
    # start; and the skip decision (lowest point above the margin) against coal's own answer
    import coal
    import trimesh
    from raisimcli.physics.robot_shapes import RobotShapes
    from raisimcli.physics.shapes import make_geometry, Shape, transform
    from raisimcli.physics.contact_set import DEFAULT_MARGIN

    rng = np.random.default_rng(12)
    u = rng.standard_normal((400, 3))  # points on an ellipsoid: every one a hull vertex
    cloud = u / np.linalg.norm(u, axis=1)[:, None] * np.array([0.03, 0.05, 0.12])
    path = str(tmp_path / "foot.obj")
    trimesh.Trimesh(cloud).convex_hull.export(path)
    geom, radius = make_geometry("mesh", None, path)
    vertices = np.asarray(geom.points())
    assert len(vertices) > 50

    class Turning:  # a system whose body 1 is where the test puts it
        name = "turning"
        R, T = np.eye(3)[None].repeat(2, 0), np.zeros((2, 3))

        def body_placements(self):
            return self.R, self.T

    placement = np.eye(4)
    placement[:3, :3], placement[:3, 3] = _random_rotation(rng), [0.01, -0.02, -0.05]
    system = Turning()
    walked = RobotShapes(system, [Shape(geom, "mesh", "foot", 1, placement, radius)])
    ground, request = coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0), coal.CollisionRequest()
    request.security_margin = DEFAULT_MARGIN
    skipped = touching = 0
    for _ in range(500):
        system.R = np.stack([np.eye(3), _random_rotation(rng)])
        system.T = np.array([[0.0, 0.0, 0.0], [0.1, -0.2, rng.uniform(-0.05, radius + 0.1)]])
        fresh = RobotShapes(system, [Shape(geom, "mesh", "foot", 1, placement, radius)])
        for rs in (walked, fresh):
            rs.update()
            pose = rs.poses[0]
            lowest_vertex = (vertices @ pose[:3, :3].T + pose[:3, 3])[:, 2].min()
            assert abs(rs.lowest[0] - lowest_vertex) < 1e-12
        reported = coal.collide(geom, transform(walked.poses[0]), ground, coal.Transform3s(),
                                request, coal.CollisionResult())
        if walked.lowest[0] > DEFAULT_MARGIN + 1e-9:
            skipped += 1
            assert not reported
        touching += bool(reported)
    assert skipped > 40 and touching > 40  # both sides of the decision were seen


@pytest.mark.parametrize("kind", ["sphere", "capsule"])
def test_sphere_or_capsule_on_the_ground_is_coal_s_contact(kind):
    # a sphere against the ground is answered without coal (the distance of its centre), and a
    # capsule as the sphere at the lower end of its axis (at its centre when the axis lies
    # flat, |cos| < CAPSULE_FLAT): the same contacts as coal.collide at 2000 random poses,
    # grounds and sizes around the margin, to within coal's rounding of the shape's rotation
    # (a few ulp); for the capsule, a fifth of the poses flat or within 1e-13..1e-6 of flat,
    # on both sides of coal's switch between its centre and its end
    import coal
    from raisimcli.physics.ground import CAPSULE_FLAT
    from raisimcli.physics.robot_shapes import RobotShapes
    from raisimcli.physics.shapes import make_geometry, Shape, transform
    from raisimcli.physics.contact_set import DEFAULT_MARGIN
    from raisimcli.physics.contact_world import ContactWorld

    class Still:  # a system whose only body is at the world origin
        name = "ball"

        def body_placements(self):
            return np.eye(3)[None].repeat(2, 0), np.zeros((2, 3))

    rng = np.random.default_rng(3)
    request = coal.CollisionRequest()
    request.security_margin, request.num_max_contacts = DEFAULT_MARGIN, 8
    seen = flat = 0
    for i in range(2000):
        h, r = rng.choice([0.0, 0.1, -0.37]), rng.uniform(0.005, 0.2)
        length = rng.uniform(0.01, 0.6)
        geom, radius = make_geometry(kind, (r,) if kind == "sphere" else (r, length))
        P = np.eye(4)
        P[:3, :3] = _random_rotation(rng)
        if kind == "capsule" and i % 5 == 0:  # its axis tilted by t from the ground's plane
            t = rng.choice([0.0, 1e-13, -1e-13, 1e-11, -1e-11, 1e-6])
            c, s = np.cos(np.pi / 2 - t), np.sin(np.pi / 2 - t)
            yaw = rng.uniform(0.0, 2 * np.pi)
            Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0.0], [np.sin(yaw), np.cos(yaw), 0.0],
                           [0.0, 0.0, 1.0]])
            P[:3, :3] = Rz @ np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
            flat += abs(P[2, 2]) < CAPSULE_FLAT
        lowest = r + (abs(P[2, 2]) * length / 2 if kind == "capsule" else 0.0)
        P[:3, 3] = [*rng.standard_normal(2), h + lowest + rng.uniform(-0.02, 2 * DEFAULT_MARGIN)]
        cw = ContactWorld()
        cw.set_ground(h)
        cw.robots.append(RobotShapes(Still(), [Shape(geom, kind, "ball", 1, P, radius)]))
        ours = cw.detect()
        result = coal.CollisionResult()
        coal.collide(geom, transform(P), coal.Halfspace(np.array([0.0, 0.0, 1.0]), h),
                     coal.Transform3s(), request, result)
        assert len(ours) == result.numContacts() <= 1
        if ours:
            seen += 1
            theirs = result.getContact(0)
            assert_close(ours[0].position, np.array(theirs.pos), rtol=0, atol=1e-15)
            assert ours[0].distance == pytest.approx(theirs.penetration_depth, rel=0, abs=1e-15)
            assert np.array_equal(ours[0].normal, -np.array(theirs.normal))
    assert 800 < seen < 1900  # both sides of the margin were seen
    if kind == "capsule":
        assert 50 < flat < 400  # (and as many just past the switch)


def _answered_and_coal_s(kind: str, geom, radius: float, P: np.ndarray, h: float) -> tuple:
    """A shape of `kind` at pose P (its body at the origin) above the ground at height h:
    (ContactWorld.detect's contacts, coal's contacts of the general detection
    (ContactWorld._ground_contacts: coal.collide, then computeContactPatch), how many of the
    loop's entries were left to coal)."""
    from raisimcli.physics.robot_shapes import RobotShapes
    from raisimcli.physics.shapes import Shape
    from raisimcli.physics.contact_set import DEFAULT_MARGIN
    from raisimcli.physics.contact_world import ContactWorld, _Found

    class Still:  # a system whose only body is at the world origin
        name = "shape"

        def body_placements(self):
            return np.eye(3)[None].repeat(2, 0), np.zeros((2, 3))

    system = Still()
    worlds = []
    for _ in range(2):
        cw = ContactWorld()
        cw.set_ground(h)
        cw.robots.append(RobotShapes(system, [Shape(geom, kind, "body", 1, P, radius)]))
        worlds.append(cw)
    ours = worlds[0].detect()
    coal_s = worlds[0].robots[0].ground_entries(h, DEFAULT_MARGIN, h + DEFAULT_MARGIN, 1e-9)[1]
    cw, rs = worlds[1], worlds[1].robots[0]
    rs.update()
    found = _Found(cw.erp, cw.slop)
    cw._request.security_margin = cw.margin
    cw._ground_contacts(rs.system, rs.shapes[0], rs.transform(0), cw._ground_params(rs)[0],
                        found)
    return ours, found.contact_set(), coal_s


def _assert_coal_s_contacts(ours, theirs, error: float) -> None:
    """The same contacts in the same order, with the same keys, bodies, frames and params, the
    positions and distances within `error`."""
    assert len(ours) == len(theirs)
    if not len(ours):
        return
    assert ours.keys == theirs.keys and ours.meta == theirs.meta
    assert_close(ours.points, theirs.points, rtol=0, atol=error)
    assert_close(ours.distance, theirs.distance, rtol=0, atol=error)
    assert np.array_equal(ours.frames, theirs.frames)
    assert np.array_equal(ours.params, theirs.params)
    assert np.array_equal(ours.bodies_a, theirs.bodies_a)


def test_a_box_on_the_ground_is_coal_s_contact_patch():
    # a box against the ground is answered without coal (ground._box_entries): the same
    # contacts as coal.collide then computeContactPatch (the general detection's) at 3000
    # random poses, grounds and sizes around the margin: as many, in the same order, with the
    # same keys, normals, frames and params, positions and distances within coal's own error
    # (it takes the box larger by 1e-10 of its half sides). A quarter of the poses are a face
    # within 1e-12..1e-4 rad of flat, a quarter an axis-aligned face exactly flat (ties in
    # coal's order of the corners), a quarter tilted so that two edges of the face rise by
    # 0.2..1 mm (3 or 4 corners within coal's 1 mm tolerance), a quarter random (a corner or
    # an edge)
    import pinocchio as pin
    from raisimcli.physics.ground import BOX_SMALLEST
    from raisimcli.physics.robot_shapes import RobotShapes
    from raisimcli.physics.shapes import make_geometry, Shape
    from raisimcli.physics.contact_set import DEFAULT_MARGIN

    rng = np.random.default_rng(9)
    sizes = {}
    for i in range(3000):
        size = rng.uniform(0.01, 0.6, 3)
        half = size / 2
        geom, radius = make_geometry("box", size)
        mode = i % 4
        if mode == 0:  # a face nearly flat
            R = pin.rpy.rpyToMatrix(*(rng.standard_normal(2) * 10 ** rng.uniform(-12, -4)),
                                    rng.uniform(-np.pi, np.pi))
        elif mode == 1:
            R = _random_rotation(rng)
        elif mode == 2:  # two edges of the face rise by a and b
            a, b = rng.uniform(0.2e-3, 1.0e-3, 2)
            R = pin.rpy.rpyToMatrix(np.arcsin(b / size[1]), np.arcsin(a / size[0]),
                                    rng.uniform(-np.pi, np.pi))
        else:  # a face exactly flat, the sides along the axes
            R = np.eye(3)
        if mode != 1:  # (which face is down: a signed permutation of the axes)
            F = np.zeros((3, 3))
            F[np.arange(3), rng.permutation(3)] = rng.choice([-1.0, 1.0], 3)
            if np.linalg.det(F) < 0:
                F[0] *= -1
            R = R @ F
        h = rng.choice([0.0, 0.1, -0.37])
        P = np.eye(4)
        P[:3, :3] = R
        lowest = (np.abs(R[2]) * half).sum()
        P[:3, 3] = [*rng.standard_normal(2), h + lowest + rng.uniform(-0.01, 2 * DEFAULT_MARGIN)]
        ours, theirs, coal_s = _answered_and_coal_s("box", geom, radius, P, h)
        assert not coal_s and len(theirs) <= 4
        _assert_coal_s_contacts(ours, theirs, 2e-10 * half.max() + 1e-15)
        sizes[(mode, len(ours))] = sizes.get((mode, len(ours)), 0) + 1
    # both sides of the margin, and patches of every size, were seen
    assert sum(v for (m, k), v in sizes.items() if k == 0) > 300
    assert sizes[(1, 1)] > 300 and sizes[(0, 4)] > 300 and sizes[(3, 4)] > 300
    assert sizes[(2, 2)] > 100 and sizes[(2, 3)] > 100 and sizes[(2, 4)] > 100
    # a box thinner than BOX_SMALLEST (a patch of coal's may take corners of two faces) is
    # left to coal: one entry of distance NaN

    class Still:
        name = "plate"

        def body_placements(self):
            return np.eye(3)[None].repeat(2, 0), np.zeros((2, 3))

    for thickness, coal_s in ((2 * BOX_SMALLEST, 0), (1.99 * BOX_SMALLEST, 1)):
        geom, radius = make_geometry("box", (0.2, 0.1, thickness))
        P = np.eye(4)
        P[2, 3] = thickness / 2
        rs = RobotShapes(Still(), [Shape(geom, "box", "body", 1, P, radius)])
        rs.update()
        n, others = rs.ground_entries(0.0, DEFAULT_MARGIN, DEFAULT_MARGIN, 1e-9)
        assert (n, others) == ((4, 0) if not coal_s else (1, 1))
        assert np.isnan(rs.entry_distance[0]) == bool(coal_s)


def test_a_cylinder_on_the_ground_is_coal_s_contact_patch():
    # a cylinder against the ground is answered without coal (ground._cylinder_entries):
    # the same contacts as coal.collide, computeContactPatch and reduce_patch (the general
    # detection's) at 3000 random poses, grounds and sizes around the margin: as many, in the
    # same order, with the same keys, frames and params, positions and distances within coal's
    # own error. A third of the poses lie within 1e-12..1e-2 rad of level (a wheel: a line of
    # two contacts, or one), a third are random (its rim), a third stand within 1e-6..1e-1 rad
    # of upright: on a face (its rim sampled, four kept) or on its rim
    import pinocchio as pin
    from raisimcli.physics.shapes import make_geometry
    from raisimcli.physics.contact_set import DEFAULT_MARGIN

    rng = np.random.default_rng(4)
    seen = {}
    for i in range(3000):
        r, length = rng.uniform(0.02, 0.3), rng.uniform(0.02, 0.6)
        geom, radius = make_geometry("cylinder", (r, length))
        mode = i % 3
        if mode == 0:  # its axis near level
            R = pin.rpy.rpyToMatrix(np.pi / 2 + rng.standard_normal() * 10 ** rng.uniform(-12, -2),
                                    0.0, rng.uniform(-np.pi, np.pi))
        elif mode == 1:
            R = _random_rotation(rng)
        else:  # near upright
            R = pin.rpy.rpyToMatrix(*(rng.standard_normal(2) * 10 ** rng.uniform(-6, -1)),
                                    rng.uniform(-np.pi, np.pi))
        h = rng.choice([0.0, 0.1, -0.37])
        P = np.eye(4)
        P[:3, :3] = R
        lowest = r * np.hypot(R[2, 0], R[2, 1]) + length / 2 * abs(R[2, 2])
        P[:3, 3] = [*rng.standard_normal(2), h + lowest + rng.uniform(-0.01, 2 * DEFAULT_MARGIN)]
        ours, theirs, coal_s = _answered_and_coal_s("cylinder", geom, radius, P, h)
        _assert_coal_s_contacts(ours, theirs, 2e-10 * max(r, length) + 1e-15)
        key = (mode, len(ours), bool(coal_s))
        seen[key] = seen.get(key, 0) + 1
    # a line of two on its side, one on its rim, four kept on a face; none left to coal
    assert not any(c for (m, k, c) in seen)
    assert seen[(0, 2, False)] > 500 and seen[(1, 1, False)] > 500 and \
        seen[(2, 1, False)] > 100 and seen[(2, 4, False)] > 400
    assert sum(v for (m, k, c), v in seen.items() if k == 0) > 500  # (beyond the margin)


def _reduce_patch_choices(P: np.ndarray, kept: set, tie: float) -> bool:
    """Whether the rows `kept` of a contact patch P (k, 3) on the ground are a choice that
    reduce_patch's rule makes when values within `tie` count as equal: row 0, a row farthest
    from it, and of the rows on each side of the line between them one farthest from it."""
    d = np.linalg.norm(P - P[0], axis=1)
    for far in np.flatnonzero(d >= d.max() - tie):
        side = np.cross(P[far] - P[0], P - P[0])[:, 2]  # (along the normal +z)
        hi = set(np.flatnonzero(side >= side.max() - tie).tolist())
        lo = set(np.flatnonzero(side <= side.min() + tie).tolist())
        rest = kept - {0, int(far)}
        if int(far) in kept and any(h in rest or h in (0, far) for h in hi) and \
                any(low in rest or low in (0, far) for low in lo) and \
                all(r in hi or r in lo for r in rest):
            return True
    return False


@pytest.mark.parametrize("mesh", ["solo_foot", "prism"])
def test_a_convex_mesh_on_the_ground_is_coal_s_contact_patch(mesh, tmp_path):
    # a convex mesh against the ground is answered without coal (ground._mesh_entries): the
    # same contacts as coal.collide, computeContactPatch and reduce_patch (the general
    # detection's) at 2000 random poses and grounds around the margin, half of them within
    # 1e-10..1e-2 rad of a pose with a face down, half random: Solo12's foot of
    # example-robot-data (672 vertices: coal walks the hull's edges) and a hexagonal prism (12
    # vertices: coal scans them in order). reduce_patch keeps four corners of a larger patch:
    # where its choice is a tie (a regular hexagon's two corners equally far from a diagonal;
    # or a turn of coal's hull within 1e-12) rounding decides, coal's or ours: there, every
    # corner we keep is one of coal's patch's, at the same distance, and the corners chosen
    # instead of coal's are as far as its (within 1e-12 m) by the rule that chose them
    import os

    import coal
    import pinocchio as pin
    import trimesh
    from raisimcli.physics.shapes import make_geometry, transform
    from raisimcli.physics.contact_set import DEFAULT_MARGIN
    from raisimcli.physics.contact_world import ContactWorld

    from test_real_urdfs import ERD
    if mesh == "solo_foot":
        path = os.path.join(ERD, "solo_description", "meshes", "stl", "with_foot",
                            "solo_foot.stl")
        if not os.path.isfile(path):
            pytest.skip("example-robot-data's Solo12 foot mesh is not installed")
    else:
        path = str(tmp_path / "prism.obj")
        trimesh.creation.cylinder(radius=0.05, height=0.03, sections=6).export(path)
    geom, radius = make_geometry("mesh", None, path)
    V = np.asarray(geom.points()).reshape(-1, 3)
    assert (V.shape[0] > 32) == (mesh == "solo_foot")
    cw = ContactWorld()  # (its coal requests)
    request = coal.CollisionRequest()
    request.security_margin, request.num_max_contacts = DEFAULT_MARGIN, 8
    rng = np.random.default_rng(1)
    seen, ties = {}, 0
    n = 1000 if mesh == "solo_foot" else 2000  # (coal walks the foot's hull: slower a pose)
    for i in range(n):
        if i % 2 == 0:  # near a pose with a face down
            R = pin.rpy.rpyToMatrix(*(rng.standard_normal(2) * 10 ** rng.uniform(-10, -2)),
                                    rng.uniform(-np.pi, np.pi))
        else:
            R = _random_rotation(rng)
        h = rng.choice([0.0, 0.1])
        P = np.eye(4)
        P[:3, :3] = R
        lowest = (V @ R.T)[:, 2].min()
        P[:3, 3] = [*rng.standard_normal(2), h - lowest + rng.uniform(-0.003, 2 * DEFAULT_MARGIN)]
        ours, theirs, coal_s = _answered_and_coal_s("mesh", geom, radius, P, h)
        assert not coal_s and len(ours) == len(theirs) <= 4
        key = (i % 2, len(ours))
        seen[key] = seen.get(key, 0) + 1
        if not len(ours) or np.abs(ours.points - theirs.points).max() <= 1e-12:
            _assert_coal_s_contacts(ours, theirs, 1e-12)
            continue
        ties += 1  # coal's whole patch, before reduce_patch
        ground = coal.Halfspace(np.array([0.0, 0.0, 1.0]), h)
        result = coal.CollisionResult()
        coal.collide(geom, transform(P), ground, coal.Transform3s(), request, result)
        patch_result = coal.ContactPatchResult(cw._patch_request)
        coal.computeContactPatch(geom, transform(P), ground, coal.Transform3s(), result,
                                 cw._patch_request, patch_result)
        patch = patch_result.getContactPatch(0)
        whole = np.array([patch.getPoint(k) for k in range(patch.size())])
        assert len(whole) > 4 and ours.keys == theirs.keys
        assert_close(ours.distance, theirs.distance, rtol=0, atol=1e-12)
        kept = set()  # which of coal's corners we keep: each of ours one of them
        for p in ours.points:
            gap = np.abs(whole - p).max(axis=1)
            assert gap.min() <= 1e-12
            kept.add(int(gap.argmin()))
        assert 0 in kept and _reduce_patch_choices(whole, kept, 1e-12)
    # (1 of the foot's poses: a turn of coal's hull within 1e-12; 211 of the prism's: its
    # regular hexagon's ties)
    assert ties <= (5 if mesh == "solo_foot" else 300)
    assert seen[(0, 4)] > n // 5 and seen[(1, 0)] > n // 10 and seen[(0, 0)] > n // 10
    assert sum(v for (m, k), v in seen.items() if m == 1 and 0 < k < 4) >= n // 250  # (an edge,
    # a tip)


def test_spheres_a_box_and_a_plate_on_the_ground_come_in_shape_order_with_their_materials():
    # a robot's spheres and box are answered in one compiled loop and its 3 mm plate (thinner
    # than ground.BOX_SMALLEST) by coal: the contacts still come in the order of the
    # shapes, each with its own body, material pair and key
    from raisimcli.physics.robot_shapes import RobotShapes
    from raisimcli.physics.shapes import make_geometry, Shape
    from raisimcli.physics.contact_world import ContactWorld

    class Still:  # bodies 1, 2, 3, 4, 5 at the world origin
        name = "still"

        def body_placements(self):
            return np.eye(3)[None].repeat(6, 0), np.zeros((6, 3))

    def at(x, z):
        P = np.eye(4)
        P[0, 3], P[2, 3] = x, z
        return P

    shapes = []
    for kind, size, body, x, z, material in (
            ("sphere", (0.05,), 1, 0.0, 0.049, "default"),     # 1 mm into the ground
            ("box", (0.2, 0.2, 0.1), 2, 1.0, 0.05, "default"),  # resting on its face
            ("sphere", (0.03,), 3, 2.0, 0.032, "rubber"),      # 2 mm above, within the margin
            ("sphere", (0.03,), 4, 3.0, 1.0, "rubber"),        # far above
            ("box", (0.2, 0.2, 0.003), 5, 4.0, 0.0005, "rubber")):  # 1 mm into the ground
        geom, radius = make_geometry(kind, size)
        shapes.append(Shape(geom, kind, f"link{body}", body, at(x, z), radius, material,
                            len(shapes)))
    cw = ContactWorld()
    cw.set_ground(0.0)
    cw.set_material_pair("rubber", "default", 0.3, 0.5)
    cw.robots.append(RobotShapes(Still(), shapes))
    found = cw.detect()
    n = len(found)
    assert n == 10  # (the plate's face: coal's patch of four corners)
    assert np.isnan(cw.robots[0].entry_distance[6])  # (its entry: coal's)
    assert [key[1] for key in found.keys] == [0, 1, 1, 1, 1, 2] + [4] * (n - 6)  # shape order
    assert found.keys[0] == ("still", 0, "ground", 0) and found.keys[5] == ("still", 2, "ground", 0)
    assert [k[3] for k in found.keys[1:5]] == [0, 1, 2, 3]  # the box face's four corners
    assert [k[3] for k in found.keys[6:]] == list(range(n - 6))
    assert found.bodies_a.tolist() == [1, 2, 2, 2, 2, 3] + [5] * (n - 6)
    assert found.alone is not None
    assert_close(found.distance[[0, 5]], [-0.001, 0.002], rtol=0, atol=1e-15)
    assert_close(found.distance[1:5], np.zeros(4), rtol=0, atol=1e-15)  # (exact: answered)
    assert_close(found.distance[6:], np.full(n - 6, -0.001), rtol=0, atol=1e-11)  # coal's
    assert_close(found.points[0], [0.0, 0.0, -0.0005], rtol=0, atol=1e-15)
    assert_close(found.points[5], [2.0, 0.0, 0.001], rtol=0, atol=1e-15)
    assert sorted(map(tuple, np.round(found.points[1:5], 9) + 0.0)) == \
        [(0.9, -0.1, 0.0), (0.9, 0.1, 0.0), (1.1, -0.1, 0.0), (1.1, 0.1, 0.0)]
    assert sorted(map(tuple, np.round(found.points[6:, :2], 9) + 0.0)) == \
        [(3.9, -0.1), (3.9, 0.1), (4.1, -0.1), (4.1, 0.1)]  # (the plate's corners)
    assert np.array_equal(found.frames[:, :, 2], np.tile([0.0, 0.0, 1.0], (n, 1)))
    assert found.params[:, :2].tolist() == [[0.8, 0.0]] * 5 + [[0.3, 0.5]] * (n - 5)
    # the spheres' params follow changes of the pairs, the default pair, erp and slop
    cw.set_material_pair("rubber", "default", 0.6, 0.1)
    cw.erp, cw.slop = 0.5, 2e-5
    from raisimcli.physics.contact_set import MaterialPair
    cw.default_pair = MaterialPair(0.7)
    found = cw.detect()
    assert found.params[[0, 5]].tolist() == [[0.7, 0.0, 0.01, 0.5, 2e-5], [0.6, 0.1, 0.01, 0.5, 2e-5]]


def test_spheres_of_a_robot_alone_on_the_ground_are_the_general_detection_s_set():
    # a robot alone on the ground whose shapes near it are spheres gets its contacts without
    # the general detection's blocks (ContactWorld._answered_on_ground): the same set as
    # _Found.add_ground_entries and contact_set make, array for array, through the quadruped's
    # fall, impacts and stand (no contact, some feet, four; meta and keys reused while the same
    # feet touch)
    from raisimcli.physics.contact_world import _Found
    w = World(0.001)
    w.add_ground()
    r = w.add_articulated_system(robot("quadruped.urdf"))
    q = r.get_generalized_coordinate()
    q[2], q[3:7] = 0.55, [0.995, 0.05, 0.08, 0.0]  # tilted: the feet land one by one
    q[7:] = [0.0, 0.6, -1.2] * 2 + [0.0, -0.6, 1.2] * 2
    r.set_state(q, np.zeros(r.nv))
    r.set_pd_gains(np.full(r.nv, 300.0), np.full(r.nv, 10.0))
    r.set_pd_target(q, np.zeros(r.nv))
    cw, counts = w.contact_world, set()
    for _ in range(600):
        w.integrate1()
        ours = w.contacts
        general = _Found(cw.erp, cw.slop)
        general.add_ground_entries(cw.robots[0], 0, len(ours))
        theirs = general.contact_set(r)
        counts.add(len(ours))
        assert len(ours) == len(theirs) and ours.alone is theirs.alone
        assert ours.meta == theirs.meta and ours.keys == theirs.keys
        for name in ("points", "frames", "distance", "params", "bodies_a", "impulse",
                     "impulse_contact", "velocity_contact", "target"):
            a, b = getattr(ours, name), getattr(theirs, name)
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), name
        w.integrate2()
    assert {0, 4} <= counts and len(counts) > 2  # apart, some feet, all four
    assert cw._last_answered is not None  # (the path of spheres alone was taken)


def test_sweep_and_prune_finds_the_overlapping_pairs_of_other_groups():
    # the compiled sweep against every pair tested directly, with shapes of three robots (one
    # with self-collision) and static shapes
    from raisimcli.physics.broad_phase import sweep_and_prune
    rng = np.random.default_rng(8)
    for trial in range(200):
        n = int(rng.integers(0, 40)) if trial % 10 else int(rng.integers(30, 120))
        # (every tenth: up to 120 shapes crowded together, more pairs than the first sweep's
        # room of 8 a shape, so the sweep runs again with room for all)
        spread = 1.0 if trial % 10 else 0.2
        centers, radii = rng.uniform(-spread, spread, (n, 3)), rng.uniform(0.01, 0.3, n)
        group = rng.integers(-1, 3, n)
        self_pairs = np.array([False, True, False, False])  # robot 1 self-collides
        margin = 0.005
        expected = set()
        for i in range(n):
            for j in range(i + 1, n):
                reach = radii[i] + radii[j] + 2 * margin
                if np.all(np.abs(centers[i] - centers[j]) <= reach) and not (
                        group[i] == group[j] and (group[i] < 0 or not self_pairs[group[i]])):
                    expected.add((i, j))
        found = sweep_and_prune(centers, radii, margin, group, self_pairs).tolist()
        assert len(found) == len(expected) and set(map(tuple, found)) == expected
        every = {(i, j) for i in range(n) for j in range(i + 1, n)
                 if np.all(np.abs(centers[i] - centers[j]) <= radii[i] + radii[j] + 2 * margin)}
        assert set(map(tuple, sweep_and_prune(centers, radii, margin).tolist())) == every


def test_robots_whose_boxes_are_apart_have_no_pair_of_shapes():
    # ContactWorld.detect_apart skips the broad phase of the shapes when the robots' boxes
    # (each the box of its shapes' broad-phase boxes, _robot_bounds) are apart: each box must be
    # the bitwise min / max of sweep_and_prune's boxes, boxes_apart the direct test of every
    # pair of boxes (closed intervals), and boxes apart must mean no pair of shapes
    from raisimcli.physics.broad_phase import boxes_apart, _robot_bounds, sweep_and_prune
    rng = np.random.default_rng(11)
    margin, met, apart = 0.005, 0, 0
    for trial in range(300):
        k = int(rng.integers(1, 6))
        sizes = rng.integers(0, 8, k)
        where = rng.uniform(-1.5, 1.5, (k, 3))
        centers = np.concatenate([where[r] + rng.uniform(-0.3, 0.3, (n, 3))
                                  for r, n in enumerate(sizes)])
        radii = rng.uniform(0.01, 0.2, len(centers))
        group = np.repeat(np.arange(k), sizes)
        if trial % 10 == 0 and k >= 2:  # two boxes that touch exactly: a face in common
            centers, radii, group = np.array([[0.0, 0, 0], [1.0, 0, 0]]), np.full(2, 0.25), \
                np.arange(2)
            k, sizes, margin_ = 2, np.array([1, 1]), 0.25
        else:
            margin_ = margin
        bounds = np.empty((k, 6))
        start = 0
        for r, n in enumerate(sizes):
            poses = np.tile(np.eye(4), (n, 1, 1))
            poses[:, :3, 3] = centers[start:start + n]
            _robot_bounds(poses, radii[start:start + n], margin_, bounds, r)
            lo = centers[start:start + n] - (radii[start:start + n] + margin_)[:, None]
            hi = centers[start:start + n] + (radii[start:start + n] + margin_)[:, None]
            expected = np.r_[lo.min(axis=0), hi.max(axis=0)] if n else \
                np.r_[np.full(3, np.inf), np.full(3, -np.inf)]
            assert bounds[r].tobytes() == expected.tobytes()
            start += n
        meet = any(np.all(bounds[i, :3] <= bounds[j, 3:]) and np.all(bounds[j, :3] <= bounds[i, 3:])
                   for i in range(k) for j in range(i + 1, k))
        assert boxes_apart(bounds) == (not meet)
        pairs = sweep_and_prune(centers, radii, margin_, group, np.zeros(k, dtype=bool))
        if not meet:
            assert len(pairs) == 0
        if trial % 10 == 0 and k == 2 and margin_ == 0.25:
            assert meet and len(pairs) == 1  # touching boxes: a pair, and boxes that meet
        met, apart = met + meet, apart + (not meet)
    assert met > 50 and apart > 50


def test_robots_on_the_ground_apart_have_the_general_detection_s_contacts():
    # a standing quadruped and one held 0.79 m above it, the second moved in x from far (their
    # boxes apart) through near (boxes that meet, shapes that do not: the second's feet beside
    # the first's body, the broad phase decides) to above it (detect()): detect_apart's sets,
    # joined, are detect()'s set array for array, or it declines
    import raisimcli.physics.broad_phase as broad_phase
    w = World(0.001)
    w.add_ground()
    robots = []
    for k in range(2):
        r = w.add_articulated_system(robot("quadruped.urdf"), name=f"q{k}")
        q = r.get_generalized_coordinate()
        stand = {"root.z": 0.4427 + 0.79 * k, "LF_HFE": 0.6, "RF_HFE": 0.6, "LH_HFE": -0.6,
                 "RH_HFE": -0.6, "LF_KFE": -1.2, "RF_KFE": -1.2, "LH_KFE": 1.2, "RH_KFE": 1.2}
        for name, v in stand.items():  # the feet on the ground (the first)
            q[r.coordinate_names.index(name)] = v
        r.set_state(q, np.zeros(r.nv))
        robots.append(r)
    cw, seen = w.contact_world, set()
    swept = []
    real = broad_phase.sweep_and_prune
    import raisimcli.physics.contact_world as contact_world
    contact_world.sweep_and_prune = lambda *a: swept.append(1) or real(*a)
    try:
        for d in np.linspace(2.0, 0.5, 151):
            q = robots[1].get_generalized_coordinate()
            q[0] = d
            robots[1].set_state(q, np.zeros(robots[1].nv))
            swept.clear()
            parts = cw.detect_apart()
            if parts is None:
                seen.add("declined")
                continue
            seen.add("swept" if swept else "boxes apart")
            whole = cw.detect()
            ours = contact_world.ContactSet.joined(parts)
            assert len(ours) == len(whole) == 4 and ours.meta == whole.meta
            assert ours.keys == whole.keys and ours.alone is whole.alone
            for name in ("points", "frames", "distance", "params", "bodies_a"):
                assert getattr(ours, name).tobytes() == getattr(whole, name).tobytes(), name
    finally:
        contact_world.sweep_and_prune = real
    assert seen == {"declined", "swept", "boxes apart"}


def test_a_joined_set_is_its_parts_one_after_the_other_whatever_is_read_first():
    # ContactSet.joined joins its parts' arrays on the first read of any of them: each field
    # read first in a set of its own gives the parts' concatenation, and every other field
    # with it; its length needs no join
    from raisimcli.physics.contact_set import ContactSet
    w = World(0.001)
    w.add_ground()
    for k in range(3):
        r = w.add_articulated_system(robot("quadruped.urdf"), name=f"q{k}")
        q = r.get_generalized_coordinate()
        stand = {"root.x": 2.0 * k, "root.z": 0.4427 if k else 1.0, "LF_HFE": 0.6,
                 "RF_HFE": 0.6, "LH_HFE": -0.6, "RH_HFE": -0.6, "LF_KFE": -1.2, "RF_KFE": -1.2,
                 "LH_KFE": 1.2, "RH_KFE": 1.2}
        for name, v in stand.items():  # the first in the air, the others on their feet
            q[r.coordinate_names.index(name)] = v
        r.set_state(q, np.zeros(r.nv))
    parts = w.contact_world.detect_apart()
    assert parts is not None and [len(p) for p in parts][1:] == [4, 4]
    for p_ in parts:
        p_.impulse[:] = np.arange(p_.impulse.size).reshape(-1, 3) + 100 * len(p_)  # results
    fields = ("points", "frames", "distance", "params", "bodies_a", "impulse", "impulse_contact",
              "velocity_contact", "target")
    for first in fields + ("meta", "keys", "alone"):
        joined = ContactSet.joined(parts)
        assert len(joined) == 8 and "meta" not in vars(joined)  # (not joined yet)
        getattr(joined, first)
        assert joined.meta == [m for p_ in parts for m in p_.meta] and joined.alone is None
        assert joined.keys == [k for p_ in parts for k in p_.keys]
        for name in fields:
            expected = np.concatenate([getattr(p_, name) for p_ in parts])
            assert getattr(joined, name).tobytes() == expected.tobytes(), (first, name)
    with pytest.raises(AttributeError):
        ContactSet.joined(parts).no_such_field


def test_contact_frame_is_right_handed_around_the_normal():
    from raisimcli.physics.contact_world import contact_frame
    rng = np.random.default_rng(5)
    for n in list(rng.standard_normal((500, 3))) + [np.array([1.0, 0, 0]), np.array([0, 0, -2.0])]:
        F = contact_frame(n)
        assert_close(F[:, 2], n / np.linalg.norm(n), rtol=0, atol=1e-15)
        assert_close(F.T @ F, np.eye(3), rtol=0, atol=1e-15)
        assert np.linalg.det(F) == pytest.approx(1.0, abs=1e-14)


def _settled_contact_worlds():
    """(world, systems) with contacts of each kind: feet on the ground (a floating base), two
    free spheres pressed together (two robots), two fingers of one robot (self-collision)."""
    w1 = World(0.001)
    w1.add_ground(0.0)
    r = w1.add_articulated_system(load_urdf(robot("quadruped.urdf")))
    q = r.get_generalized_coordinate()
    q[2], q[7:] = 0.4485, [0.0, 0.6, -1.2, 0.0, 0.6, -1.2, 0.0, -0.6, 1.2, 0.0, -0.6, 1.2]
    q[3:7] = [math.cos(0.05), math.sin(0.05) * 0.6, 0.0, math.sin(0.05) * 0.8]
    r.set_state(q, np.zeros(18))
    w2 = World(0.001, gravity=(0, 0, 0))
    a = w2.add_articulated_system(load_urdf_string(box_urdf(1.0, (0.1, 0, 0), "sphere")), name="a")
    b = w2.add_articulated_system(load_urdf_string(box_urdf(3.0, (0.1, 0, 0), "sphere")), name="b")
    qa, qb = a.get_generalized_coordinate(), b.get_generalized_coordinate()
    qa[:3], qb[:3] = [-0.1, 0.01, 0.0], [0.099, 0.0, 0.02]
    a.set_state(qa, np.zeros(6))
    b.set_state(qb, np.zeros(6))
    w3 = World(0.001, gravity=(0, 0, 0))
    f = w3.add_articulated_system(load_urdf_string(_fingers_urdf()))
    w3.configure_contacts(f, self_collision=True)
    f.set_state([0.09, 0.09], [0.0, 0.0])
    return [(w1, [r]), (w2, [a, b]), (w3, [f])]


def test_a_contact_s_arrays_are_read_only_views_of_the_step_s_record():
    w, (r,) = _settled_contact_worlds()[0]
    w.integrate()
    c = r.get_contacts()[0]
    before = w.contacts.impulse.copy()
    for name in ("position", "frame", "normal", "impulse", "impulse_contact",
                 "velocity_contact"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(c, name)[0] = 1.0
    assert np.array_equal(w.contacts.impulse, before)
    kept = c.impulse.copy()
    kept[0] = 1.0  # a copy is the user's to change
    assert np.shares_memory(c.impulse, w.contacts.impulse) and c.impulse[0] != 1.0


def _point_position(system, link, local, q):
    """World position of the point `local` of `link` at the coordinates q."""
    q0, u0 = system.get_state()
    system.set_state(q, u0)
    p = system.get_frame_position(link) + system.get_frame_orientation(link) @ local
    system.set_state(q0, u0)
    return p


def test_contact_rows_give_the_relative_velocity_of_the_contact_point():
    # J u of each contact's rows against the central difference of the positions of the two
    # material points at the contact point (each fixed to its body), along a random velocity
    from raisimcli.physics.step.contact_rows import contact_rows
    rng = np.random.default_rng(2)
    for w, systems in _settled_contact_worlds():
        w.integrate1()
        contacts = w.contacts
        assert contacts
        offsets = np.cumsum([0] + [s.nv for s in systems])
        index = {id(s): k for k, s in enumerate(systems)}
        u = [rng.standard_normal(s.nv) for s in systems]
        rows = contact_rows(contacts, systems, index, offsets, int(offsets[-1]), w.dt,
                            np.concatenate(u))
        v_rows = rows.J @ np.concatenate(u)
        eps = 1e-6
        for c_i, c in enumerate(contacts):
            v = np.zeros(3)
            for system, link, sign in ((c.system_a, c.link_a, 1.0), (c.system_b, c.name_b, -1.0)):
                if system is None:
                    continue
                k = index[id(system)]
                local = system.get_frame_orientation(link).T @ \
                    (c.position - system.get_frame_position(link))
                q = system.get_generalized_coordinate()
                ahead = _point_position(system, link, local, system.conv.integrate(q, u[k], eps))
                back = _point_position(system, link, local, system.conv.integrate(q, u[k], -eps))
                v += sign * (ahead - back) / (2 * eps)
            assert_close(v_rows[3 * c_i:3 * c_i + 3], c.frame.T @ v, rtol=1e-7, atol=1e-8)


def test_contact_rows_after_joint_rows_are_the_two_stacked():
    """contact_rows(..., before=joint rows) writes the contact rows under the joint rows without
    stacking copies: it must give exactly Rows.stack([joint rows, contact rows]) (every array,
    label, key and block), here with the hind knees beyond their limits (scalar rows) and four
    feet on the ground."""
    from raisimcli.physics.step.contact_rows import contact_rows
    from raisimcli.physics.step.solver import Rows
    w = World(0.001)
    w.add_ground(0.0)
    r = w.add_articulated_system(load_urdf(robot("quadruped.urdf")))
    q = r.get_generalized_coordinate()
    q[2], q[7:] = 0.4485, [0.0, 0.6, -1.2, 0.0, 0.6, -1.2, 0.0, -0.6, 1.2, 0.0, -0.6, 1.2]
    r.set_state(q, np.zeros(18))
    r.set_pd_gains(np.full(18, 300.0), np.full(18, 10.0))
    r.set_pd_target(q, np.zeros(18))
    for _ in range(300):  # settle onto the feet
        w.integrate()
    w.integrate1()
    stage = make_stage(r, w.dt, *r.pinocchio_dynamics())
    joint = stage.joint_rows
    assert joint.m and w.contacts
    args = (w.contacts, [r], {id(r): 0}, [0, r.nv], r.nv, w.dt, r.u)
    merged = contact_rows(*args, before=joint)
    stacked = Rows.stack([joint, contact_rows(*args)])
    for name in ("J", "target", "lo", "hi", "block_start", "block_kind", "block_mu"):
        assert np.array_equal(getattr(merged, name), getattr(stacked, name)), name
        assert getattr(merged, name).dtype == getattr(stacked, name).dtype, name
    assert merged.source == stacked.source and merged.key == stacked.key
    assert merged.source.count("contacts") == 3 * len(w.contacts) and \
        merged.source[:joint.m] == joint.source
    # the rows of each source, carried over from the joint rows' groups: those of the labels
    fresh = Rows(merged.J, merged.target, merged.lo, merged.hi, merged.source, merged.key)
    (s1, o1, b1), (s2, o2, b2) = merged.source_groups(), fresh.source_groups()
    assert s1 == s2 and np.array_equal(o1, o2) and np.array_equal(b1, b2) and o1.dtype == o2.dtype


def test_normal_targets_in_the_compiled_loop_are_the_contact_s_rule():
    # the rows' normal targets (one compiled loop over the set's arrays) against
    # Contact.target_normal_velocity, the rule as docs/contacts.md states it, per contact: 2000
    # random contacts separated, penetrating beyond and within the slop, bouncing or not
    from raisimcli.physics.contact_set import ContactSet
    from raisimcli.physics.step.contact_rows import _normal_targets
    rng = np.random.default_rng(8)
    n, dt = 2000, 0.001
    distance = rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-8, -2, n)
    distance[:20] = [0.0, -0.0] * 10
    params = np.column_stack([rng.uniform(0, 1, n), rng.choice([0.0, 0.5, 1.0], n),
                              rng.uniform(0, 0.05, n), rng.uniform(0, 1, n),
                              rng.choice([0.0, 1e-5], n)])
    vn = rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-4, 1, n)
    cs = ContactSet([(None, 1, "l", None, -1, "ground")] * n, list(range(n)), np.zeros((n, 3)),
                    np.zeros((n, 3, 3)), distance, params)
    target = np.full(3 * n + 5, np.nan)
    _normal_targets(distance, params, vn, dt, target, 5)
    expected = [cs[c].target_normal_velocity(dt, float(vn[c])) for c in range(n)]
    assert np.array_equal(target[5 + 2::3], np.array(expected))
    bounced = [c for c in range(n) if expected[c] == -params[c, 1] * vn[c] and vn[c] < 0]
    assert len(bounced) > 50 and np.isnan(target[5::3]).all()  # both rules seen; t1, t2 untouched


def test_contact_rows_of_a_robot_alone_are_those_of_the_general_path():
    # the rows of a robot alone against the static world (no per-contact bookkeeping) against
    # the path that sorts every contact's two sides (as for two robots), on the settled feet
    from raisimcli.physics.step.contact_rows import contact_rows
    w, (r,) = _settled_contact_worlds()[0]
    for _ in range(5):
        w.integrate()
    w.integrate1()
    cs = w.contacts
    assert cs.alone is r and len(cs) >= 2
    args = ([r], {id(r): 0}, [0, r.nv], r.nv, w.dt, r.u)
    fast = contact_rows(cs, *args)
    cs.alone = None
    general = contact_rows(cs, *args)
    for name in ("J", "target", "lo", "hi", "block_start", "block_kind", "block_mu"):
        assert np.array_equal(getattr(fast, name), getattr(general, name)), name
    assert fast.key == general.key and fast.source == general.source


def test_contact_loads_as_arrays_are_the_contacts_point_loads():
    # inverse dynamics takes a step's contact forces as one ContactLoads record; it must give
    # the wrenches of the same forces listed one point load per contact side (Contact.loads_on),
    # bit for bit: feet on the ground, two robots pressed together, a robot touching itself
    for w, systems in _settled_contact_worlds():
        for s, closing in zip(systems, (1.0, -1.0)):  # the two spheres, the fingers: pressed
            s.set_compute_inverse_dynamics(True)
            q, u = s.get_state()
            if len(systems) == 2:
                u[0] = 0.1 * closing
            elif s.nv == 2:
                u[:] = 0.1
            s.set_state(q, u)
        for _ in range(50):  # until the contacts carry impulses
            w.integrate()
            if len(w.contacts) and np.any(w.contacts.impulse):
                break
        assert np.any(w.contacts.impulse)
        for s in systems:
            q, u = s.get_state()
            a = np.linspace(-1.0, 1.0, s.nv)
            record = w.contacts.loads_on(s, w.dt)
            one_by_one = [ld for c in w.contacts for ld in c.loads_on(s, w.dt)]
            assert len(record.links) == len(one_by_one) > 0
            by_record = s._idyn.compute(q, u, a, [record])
            by_loads = s._idyn.compute(q, u, a, one_by_one)
            for name in ("force", "torque", "actuation"):
                assert np.array_equal(getattr(by_record, name), getattr(by_loads, name),
                                      equal_nan=True), name


def test_a_patch_of_more_than_four_corners_is_reduced_to_the_four_that_span_it():
    # reduce_patch: a polygon's first corner, the corner farthest from it and the farthest on
    # each side of that line, in order; four corners or fewer are kept as they are. Checked on
    # regular n-gons at random poses: the kept quadrilateral holds the polygon's centre and has
    # at least 2/pi of the polygon's area (a square in a circle: the least a diameter allows)
    from raisimcli.physics.contact_world import reduce_patch
    rng = np.random.default_rng(4)
    square = [np.array(p, dtype=float) for p in ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0))]
    assert reduce_patch(square, np.array([0, 0, 1.0])) is square
    for n in range(5, 13):
        R = _random_rotation(rng)
        a = 2 * np.pi * np.arange(n) / n + rng.uniform(0, 2 * np.pi)
        ring = np.column_stack([np.cos(a), np.sin(a), np.zeros(n)]) * 0.01
        points = [R @ p + np.array([0.3, -0.2, 0.0]) for p in ring]
        kept = reduce_patch(points, R[:, 2])
        index = [next(i for i, p in enumerate(points) if p is k) for k in kept]
        assert len(kept) == 4 and index == sorted(index) and index[0] == 0
        flat = [R.T @ (k - np.array([0.3, -0.2, 0.0])) for k in kept]
        xy = np.array(flat)[:, :2]
        centre = xy.mean(axis=0)
        order = np.argsort(np.arctan2(xy[:, 1] - centre[1], xy[:, 0] - centre[0]))
        x, y = xy[order, 0], xy[order, 1]
        area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
        polygon = 0.5 * n * np.sin(2 * np.pi / n) * 0.01 ** 2
        assert area >= 2 / np.pi * polygon * (1 - 1e-12)
        # the polygon's centre (the origin of `flat`) inside the quadrilateral
        edges = [(x[i], y[i], x[(i + 1) % 4], y[(i + 1) % 4]) for i in range(4)]
        assert all((x1 - x0) * (0 - y0) - (y1 - y0) * (0 - x0) >= -1e-18
                   for x0, y0, x1, y1 in edges)


def test_an_octagonal_prism_rests_on_four_of_its_eight_corners(tmp_path):
    """A convex mesh with an 8-corner bottom face (an octagonal prism, 1 kg) resting on the
    ground: coal's patch has 8 corners, the contacts are 4 of them, and they carry the weight
    with the body at rest on its face."""
    a = 2 * np.pi * np.arange(8) / 8
    ring = np.column_stack([0.05 * np.cos(a), 0.05 * np.sin(a)])
    vertices = [(x, y, z) for z in (-0.02, 0.02) for x, y in ring]
    faces = [(1, 1 + k, 2 + k) for k in range(1, 7)] + [(9, 10 + k, 9 + k) for k in range(1, 7)] + \
        [f for k in range(8) for f in ((1 + k, 1 + (k + 1) % 8, 9 + (k + 1) % 8),
                                       (1 + k, 9 + (k + 1) % 8, 9 + k))]
    obj = tmp_path / "prism.obj"
    obj.write_text("".join(f"v {x} {y} {z}\n" for x, y, z in vertices) +
                   "".join(f"f {i} {j} {k}\n" for i, j, k in faces))
    w, r = _mesh_body_settled(str(obj), (0.001, 0.001, 0.002), 0.021)
    assert len(w.contacts) == 4
    assert all(abs(np.hypot(*c.position[:2]) - 0.05) < 1e-9 for c in w.contacts)  # corners
    assert sum(c.impulse[2] for c in w.contacts) / w.dt == pytest.approx(G, rel=1e-6)
    assert r.q[2] == pytest.approx(0.02, abs=1e-5)
    assert np.abs(r.u).max() < 1e-6


def test_a_pendulum_of_one_dof_comes_to_rest_on_the_ground():
    # one DoF (Pinocchio's joint Jacobian is then a vector): a sphere on an arm swings down from
    # the horizontal and rests where it touches the ground, sin(theta) = (z_pivot - r) / L
    z_pivot, L, radius = 0.4, 0.45, 0.05
    urdf = f"""<robot name="pendulum"><link name="world"/>
      <link name="arm"><inertial><origin xyz="{L} 0 0"/><mass value="1"/>
        <inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><origin xyz="{L} 0 0"/><geometry><sphere radius="{radius}"/></geometry>
        </collision></link>
      <joint name="hinge" type="continuous"><origin xyz="0 0 {z_pivot}"/><parent link="world"/>
        <child link="arm"/><axis xyz="0 1 0"/><dynamics damping="0.05"/></joint></robot>"""
    w = World(0.001)
    w.add_ground(0.0)
    r = w.add_articulated_system(load_urdf_string(urdf, path="pendulum.urdf"))
    for _ in range(3000):
        w.integrate()
    assert len(w.contacts) == 1
    assert r.q[0] == pytest.approx(math.asin((z_pivot - radius) / L), abs=2e-4)
    assert abs(r.u[0]) < 1e-6


def test_a_robot_without_joints_or_moving_shapes_steps_beside_the_ground():
    # a single link (a URDF of a static object: nv = 0, its shape welded where it is, nothing
    # moving to collide) in a world with a ground, alone and beside a robot: it filled its
    # (0, 4, 4) poses from an empty list and raised numpy's ValueError (pybullet_data's
    # xarm/link5.urdf and 14 others)
    from raisimcli.model import load_urdf_string
    urdf = """<robot name="post"><link name="world"/>
      <joint name="weld" type="fixed"><parent link="world"/><child link="base"/></joint>
      <link name="base"><inertial><mass value="1"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
      <collision><geometry><box size="0.1 0.1 0.5"/></geometry></collision></link></robot>"""
    for other in (False, True):
        w = World(0.001)
        w.add_ground(-0.5)
        post = w.add_articulated_system(load_urdf_string(urdf, path="post.urdf"))
        if other:
            r = w.add_articulated_system(robot("quadruped.urdf"))
            q = r.get_generalized_coordinate()
            q[0] = 2.0
            r.set_state(q, np.zeros(r.nv))
        assert post.nv == 0
        for _ in range(20):
            w.integrate()
        assert post.q.size == 0 and set(post.torque) >= {"total"}


def test_a_detection_with_more_contacts_than_its_first_arrays_keeps_them_all_in_order():
    # the detection's arrays grow as contacts come: one contact at a time and a patch's corners
    # at once, past their first size, give the rows in the order added, each with its normal,
    # depth, params and body (the frames from the normals)
    from types import SimpleNamespace
    from raisimcli.physics.contact_set import MaterialPair
    from raisimcli.physics.contact_world import _Found, contact_frame
    rng = np.random.default_rng(3)
    found, expected = _Found(0.2, 1e-5, capacity=2), []
    params = found.params_of(MaterialPair(0.7, 0.1, 0.02))
    for k in range(12):
        shape = SimpleNamespace(body=k % 3 + 1, link=f"l{k}")
        normal = rng.standard_normal(3)
        normal /= np.linalg.norm(normal)
        if k % 2:
            p, d = rng.standard_normal(3), -0.001 * k
            found.add("sys", shape, None, -1, "ground", p, normal, d, params, ("sys", k, 0))
            expected.append((p, normal, d, shape.body))
        else:
            corners = rng.standard_normal((4, 3))
            found.add_patch("sys", shape, None, -1, "ground", corners, normal, -0.002, params,
                            [("sys", k, i) for i in range(4)])
            expected += [(c, normal, -0.002, shape.body) for c in corners]
    cs = found.contact_set()
    assert len(cs) == len(expected) == 30 and len(found.keys) == 30
    for i, (p, normal, d, body) in enumerate(expected):
        assert np.array_equal(cs.points[i], p) and cs.distance[i] == d
        assert cs.bodies_a[i] == body
        assert np.array_equal(cs.params[i], [0.7, 0.1, 0.02, 0.2, 1e-5])
        assert np.allclose(cs.frames[i], contact_frame(normal), atol=1e-15)


def _roller(with_shape: bool) -> str:
    # a cylinder on a horizontal hinge along its own axis (joint "roll", about y, 49.5 mm above
    # the ground): its 50 mm radius dips 0.5 mm into the ground below the hinge; its mass sits
    # off the axis, so gravity swings it as a pendulum. (Z1's second link in example-robot-data
    # is such a cylinder.)
    shape = ('<collision><origin rpy="1.5707963267948966 0 0"/><geometry>'
             '<cylinder radius="0.05" length="0.1"/></geometry></collision>') if with_shape else ""
    return f"""<robot name="roller">
  <link name="world"/>
  <joint name="roll" type="continuous"><parent link="world"/><child link="roller"/>
    <origin xyz="0 0 0.0495"/><axis xyz="0 1 0"/></joint>
  <link name="roller"><inertial><origin xyz="0.03 0 0.02"/><mass value="1.0"/>
    <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    {shape}</link>
</robot>"""


def test_a_contact_the_mechanism_cannot_move_along_gets_no_impulse():
    # The roller touches the ground below its hinge, where turning only moves it along the
    # ground: no motion of the robot moves those points along the normal, so no impulse can push
    # them out (their normal's Delassus entry is 0 or rounding, 1e-39 of the friction's). They
    # get no impulse, and the robot moves as it does without the shape: the same trajectory (no
    # other row sees the contacts, whose impulses stay 0). Before, the impulse that would meet
    # the normal target was 1e21 N s at the second step, and the velocity 5e19 rad/s.
    runs = []
    for with_shape in (True, False):
        w = World(0.001)
        w.add_ground(0.0)
        r = w.add_articulated_system(load_urdf_string(_roller(with_shape)))
        r.set_state(np.zeros(1), np.array([0.5]))  # turning at 0.5 rad/s
        states, impulses = [], []
        for _ in range(300):
            w.integrate()
            states.append(np.concatenate([r.q, r.u]))
            impulses.append([c.impulse for c in w.contacts])
        runs.append((np.array(states), impulses))
    (with_shape, impulses), (without, none) = runs
    assert all(len(step) > 0 for step in impulses)  # it touches the ground at every step
    assert all(len(step) == 0 for step in none)
    assert np.all(np.array([np.abs(c).max() for step in impulses for c in step]) == 0.0)
    assert np.abs(with_shape - without).max() <= 1e-12
    assert np.ptp(without[:, 0]) > 0.1  # and gravity swings it


def test_links_that_start_inside_each_other_are_reported_by_how_deep():
    # two spheres of radius 0.1 m whose centres are 0.15 m apart overlap by 2 r - d = 0.05 m;
    # apart once the arm turns them apart, and not listed once their pair is left out
    from models import folded_arm_urdf
    w = World(0.001, (0, 0, 0))
    r = w.add_articulated_system(load_urdf_string(folded_arm_urdf()))
    w.configure_contacts(r, self_collision=True)
    (a, b, depth), = w.contact_world.self_overlaps(r)
    assert (a, b) == ("base", "lower")
    assert depth == pytest.approx(0.05, abs=1e-12)
    q = r.get_generalized_coordinate()
    q[r.coordinate_names.index("fold")] = math.pi / 2  # centres 0.206 m apart
    r.set_state(q, np.zeros(r.nv))
    assert w.contact_world.self_overlaps(r) == []
    r.set_state(r.model.neutral_configuration(), np.zeros(r.nv))
    w.configure_contacts(r, self_collision=True, excluded_pairs=[("lower", "base")])
    assert w.contact_world.self_overlaps(r) == []
    w.configure_contacts(r, self_collision=False)
    assert w.contact_world.self_overlaps(r) == []


def test_two_robots_that_start_inside_each_other_are_reported_by_how_deep():
    # two balls of radius 0.1 m (box_urdf's sphere), centres 0.15 m apart: 0.05 m deep, the
    # robot added first named first; apart at 0.25 m
    w = World(0.001, (0, 0, 0))
    a = w.add_articulated_system(load_urdf_string(box_urdf(size=(0.1,) * 3, shape="sphere")),
                                 name="a")
    b = w.add_articulated_system(load_urdf_string(box_urdf(size=(0.1,) * 3, shape="sphere")),
                                 name="b")
    q = b.get_generalized_coordinate()
    q[0] = 0.15
    b.set_state(q, np.zeros(6))
    (sa, la, sb, lb, depth), = w.contact_world.overlaps()
    assert (sa, la, sb, lb) == (a, "body", b, "body")
    assert depth == pytest.approx(0.05, abs=1e-12)
    assert w.contact_world.self_overlaps(a) == []  # (no self-collision)
    q[0] = 0.25
    b.set_state(q, np.zeros(6))
    assert w.contact_world.overlaps() == []
