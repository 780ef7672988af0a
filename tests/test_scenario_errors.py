"""Every kind of scenario error: exit 2, one message naming the scenario file, the key path and
expected vs. got; no traceback."""

import pytest
from click.testing import CliRunner

from conftest import ROBOTS
from raisimcli.cli.main import cli

BASE = f"""schema_version = 1
[world]
dt = 0.001
steps = 5

[[robot]]
name = "dog"
urdf = "{ROBOTS}/quadruped.urdf"
[robot.initial]
q = {{ "root.z" = 0.6 }}
[robot.pd]
kp = 50.0
kd = 1.0
[robot.pd.target]
LF_HFE = 0.3
[robot.feedforward]
LF_KFE = 1.0
[robot.actuators.torque]
RF_HAA_actuator = 0.5
[[robot.external]]
link = "base"
force = [0.0, 0.0, 10.0]
start = 0.0
stop = 0.002
[[robot.spring]]
joint = "LH_KFE"
stiffness = 10.0
rest = -1.0
[robot.damping]
RH_KFE = 0.3

[log]
decimation = 1
"""

# (id, old, new, fragment of the message). Each breaks BASE in one place.
MUTATIONS = [
    ("unknown-top-key", "schema_version = 1", "schema_version = 1\ncolour = 3", "colour: unknown key"),
    ("unknown-world-key", "dt = 0.001", "dt = 0.001\ntimestep = 2", "world.timestep: unknown key"),
    ("unknown-robot-key", 'name = "dog"', 'name = "dog"\nmass = 3', "robot[0].mass: unknown key"),
    ("schema-version", "schema_version = 1", "schema_version = 2", "schema_version"),
    ("dt-type", "dt = 0.001", 'dt = "fast"', "world.dt"),
    ("dt-negative", "dt = 0.001", "dt = -0.001", "world.dt: Input should be greater than 0"),
    ("no-length", "steps = 5", "", "duration (s) or steps"),
    ("both-lengths", "steps = 5", "steps = 5\nduration = 1.0", "either duration or steps"),
    ("gravity-size", "dt = 0.001", "dt = 0.001\ngravity = [0, -9.81]", "world.gravity"),
    ("scheme", "dt = 0.001", 'dt = 0.001\nintegration_scheme = "RK45"', "world.integration_scheme"),
    ("missing-urdf-key", f'urdf = "{ROBOTS}/quadruped.urdf"', "", "robot[0].urdf: missing required key"),
    ("missing-urdf-file", f'urdf = "{ROBOTS}/quadruped.urdf"', 'urdf = "nope.urdf"', "robot[0].urdf: URDF file 'nope.urdf' not found"),
    ("no-robot", "[[robot]]", "[[robots]]", "unknown key"),
    ("kp-size", "kp = 50.0", "kp = [1.0, 2.0]", "robot[0].pd.kp: expected 18 numbers"),
    ("kp-joint", "kp = 50.0", "kp = { knee = 3.0 }", "robot[0].pd.kp.knee: unknown DoF 'knee'"),
    ("kp-type", "kp = 50.0", 'kp = "high"', "robot[0].pd.kp"),
    ("kd-nan", "kd = 1.0", "kd = nan", "robot[0].pd.kd"),
    ("target-joint", "LF_HFE = 0.3", "LF_HIP = 0.3", "robot[0].pd.target.LF_HIP: unknown joint 'LF_HIP'"),
    ("target-schedule-type", "LF_HFE = 0.3", 'LF_HFE = { type = "square", value = 1 }', "robot[0].pd.target.LF_HFE"),
    ("target-sine-frequency", "LF_HFE = 0.3", 'LF_HFE = { type = "sine", amplitude = 1, frequency = 0 }', "frequency"),
    ("ramp-stop-before-start", "LF_HFE = 0.3", 'LF_HFE = { type = "ramp", start = 2.0, stop = 1.0, stop_value = 1 }', "stop (1.0) must be after start (2.0)"),
    ("piecewise-lengths", "LF_HFE = 0.3", 'LF_HFE = { type = "piecewise", times = [0, 1], values = [1] }', "same length"),
    ("piecewise-order", "LF_HFE = 0.3", 'LF_HFE = { type = "piecewise", times = [1, 0], values = [1, 2] }', "strictly increasing"),
    ("csv-missing", "LF_HFE = 0.3", 'LF_HFE = { type = "csv", file = "none.csv", column = "a" }', "robot[0].pd.target.LF_HFE.file: CSV file 'none.csv' not found"),
    ("csv-column", "LF_HFE = 0.3", 'LF_HFE = { type = "csv", file = "traj.csv", column = "zz" }', "has no column 'zz'"),
    ("csv-bad-number", "LF_HFE = 0.3", 'LF_HFE = { type = "csv", file = "bad.csv", column = "a" }', "line 3: expected numbers"),
    ("csv-time-order", "LF_HFE = 0.3", 'LF_HFE = { type = "csv", file = "order.csv", column = "a" }', "times must increase"),
    ("q-size", 'q = { "root.z" = 0.6 }', "q = [0.0, 1.0]", "robot[0].initial.q: expected 19 numbers"),
    ("q-name", 'q = { "root.z" = 0.6 }', 'q = { "root.h" = 0.6 }', "robot[0].initial.q.root.h: unknown coordinate"),
    ("u-name", 'q = { "root.z" = 0.6 }', 'u = { LF_XXX = 1.0 }', "robot[0].initial.u.LF_XXX: unknown DoF"),
    ("ff-dof", "LF_KFE = 1.0", "LF_KNEE = 1.0", "robot[0].feedforward.LF_KNEE: unknown DoF"),
    ("actuator-name", "RF_HAA_actuator = 0.5", "RF_HAA_motor = 0.5", "robot[0].actuators.torque.RF_HAA_motor: unknown actuator"),
    ("load-link", 'link = "base"', 'link = "torso"', "robot[0].external[0].link: unknown link 'torso'"),
    ("load-stop-before-start", "stop = 0.002", "stop = -1.0", "stop (-1.0) must be after start (0.0)"),
    ("load-force-and-torque", "force = [0.0, 0.0, 10.0]", "force = [0.0, 0.0, 10.0]\ntorque = [1.0, 0.0, 0.0]", "exactly one of force and torque"),
    ("load-vector-size", "force = [0.0, 0.0, 10.0]", "force = [0.0, 10.0]", "robot[0].external[0].force"),
    ("spring-joint", 'joint = "LH_KFE"', 'joint = "root"', "robot[0].spring[0].joint"),
    ("spring-rest-size", "rest = -1.0", "rest = [1.0, 2.0]", "robot[0].spring[0].rest: expected 1 number"),
    ("spring-negative", "stiffness = 10.0", "stiffness = -10.0", "robot[0].spring[0].stiffness"),
    ("damping-joint", "RH_KFE = 0.3", "RH_KNEE = 0.3", "robot[0].damping.RH_KNEE: unknown joint"),
    ("damping-negative", "RH_KFE = 0.3", "RH_KFE = -0.3", "robot[0].damping.RH_KFE"),
    ("decimation", "decimation = 1", "decimation = 0", "log.decimation"),
    ("log-signal", "decimation = 1", 'signals = ["state", "vibes"]', "log.signals[1]"),
    ("controller-format", 'name = "dog"', 'name = "dog"\ncontroller = "ctrl.py"', "robot[0].controller: expected 'file.py:function'"),
    ("controller-file", 'name = "dog"', 'name = "dog"\ncontroller = "nofile.py:control"', "robot[0].controller: controller file 'nofile.py' not found"),
    ("controller-function", 'name = "dog"', 'name = "dog"\ncontroller = "ctrl.py:nothere"', "has no function 'nothere'"),
    ("bad-toml", "dt = 0.001", "dt = = 0.001", "invalid TOML"),
    ("base-override", 'name = "dog"', 'name = "dog"\nbase = "wobbly"', "robot[0].base"),
]


@pytest.fixture
def scenario_dir(tmp_path):
    (tmp_path / "traj.csv").write_text("time,a\n0,0\n1,1\n")
    (tmp_path / "bad.csv").write_text("time,a\n0,0\n1,one\n")
    (tmp_path / "order.csv").write_text("time,a\n0,0\n1,1\n0.5,2\n")
    (tmp_path / "ctrl.py").write_text("def control(t, robot):\n    pass\n")
    return tmp_path


def run(*args):
    return CliRunner().invoke(cli, list(args))


def test_base_scenario_runs(scenario_dir):
    p = scenario_dir / "s.toml"
    p.write_text(BASE)
    r = run("run", str(p), "-q", "-o", str(scenario_dir / "out.h5"))
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("case", MUTATIONS, ids=[c[0] for c in MUTATIONS])
def test_mutated_scenario_exit_2(scenario_dir, case):
    name, old, new, fragment = case
    assert old in BASE, name
    p = scenario_dir / "s.toml"
    p.write_text(BASE.replace(old, new, 1))
    out = scenario_dir / "out.h5"
    r = run("run", str(p), "-q", "-o", str(out))
    assert r.exit_code == 2, (name, r.output)
    assert "Traceback" not in r.output
    lines = [line for line in r.output.strip().splitlines() if line.strip()]
    assert lines[0].startswith("error:"), r.output
    assert all(str(p) in line for line in lines), r.output  # every error names the file
    assert any(fragment in line for line in lines), r.output
    assert not out.exists()  # nothing written on bad input


def test_at_least_thirty_mutations():
    assert len(MUTATIONS) >= 30


def test_set_override_errors(scenario_dir):
    p = scenario_dir / "s.toml"
    p.write_text(BASE)
    r = run("run", str(p), "-q", "--set", "world.dtt=3", "-o", str(scenario_dir / "o.h5"))
    assert r.exit_code == 2 and "world.dtt: unknown key" in r.output
    r = run("run", str(p), "-q", "--set", "robot.3.name=x", "-o", str(scenario_dir / "o.h5"))
    assert r.exit_code == 2 and "expected an index below" in r.output
    r = run("run", str(p), "-q", "--set", "nonsense", "-o", str(scenario_dir / "o.h5"))
    assert r.exit_code == 2 and "key.path=value" in r.output


def test_missing_scenario_file(tmp_path):
    r = run("run", str(tmp_path / "none.toml"))
    assert r.exit_code == 2 and "scenario file not found" in r.output


def test_independent_errors_are_reported_at_once_with_suggestions(scenario_dir):
    text = BASE.replace("[world]", "[world]\ngravty = [0.0, 0.0, -9.81]", 1)
    assert "dt = " in text
    text = text.replace("dt = ", 'dt = "x" #', 1)
    p = scenario_dir / "s.toml"
    p.write_text(text)
    r = run("run", str(p), "-q")
    assert r.exit_code == 2
    lines = [line for line in r.output.strip().splitlines() if line.strip()]
    assert len(lines) == 2, r.output
    assert any("world.gravty: unknown key; did you mean 'gravity'?" in x for x in lines)
    assert any("world.dt" in x for x in lines)


def _robots_scenario(*robots, steps: int = 5) -> str:
    """A scenario of 1 ms steps with these (name, URDF path) robots and nothing else."""
    text = f"schema_version = 1\n[world]\ndt = 0.001\nsteps = {steps}\n"
    return text + "".join(f'[[robot]]\nname = "{n}"\nurdf = "{u}"\n' for n, u in robots)


def test_two_robots_at_the_same_place_stop_with_one_error(tmp_path):
    # two fixed-base arms of one URDF: their shapes coincide, and coal gives their contacts no
    # direction (it divided by zero before: a traceback)
    p = tmp_path / "two.toml"
    p.write_text(_robots_scenario(("a", f"{ROBOTS}/arm7.urdf"), ("b", f"{ROBOTS}/arm7.urdf")))
    r = run("run", str(p), "-q", "-o", str(tmp_path / "out.h5"))
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)
    assert "of robot 'a' and link" in r.output and "of robot 'b' overlap" in r.output
    assert "place them apart" in r.output


def test_a_floating_object_without_mass_is_told_to_take_a_fixed_base(tmp_path):
    # PyBullet's URDFs write mass 0 for a body that never moves (its plane.urdf, its random
    # objects): loaded with a floating base it moves no mass; the one error says what to do
    urdf = tmp_path / "plane.urdf"
    urdf.write_text("""<robot name="plane"><link name="base"><inertial><mass value="0"/>
      <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial>
      <collision><geometry><box size="10 10 0.1"/></geometry></collision></link></robot>""")
    p = tmp_path / "s.toml"
    p.write_text(_robots_scenario(("plane", urdf)))
    r = run("run", str(p), "-q", "-o", str(tmp_path / "out.h5"))
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "DoF 'root.vx'" in r.output and 'base = "fixed"' in r.output
    # with a fixed base it is a robot without DoFs: its log has rows of no column (HDF5 refused
    # the datasets' chunks, then the chunks' compression failed: tracebacks), over a full chunk
    # of rows (the helper process's compression) and a partial one
    p.write_text(_robots_scenario(("plane", urdf), steps=1500) + 'base = "fixed"\n')
    out = tmp_path / "out.h5"
    r = run("run", str(p), "-q", "-o", str(out))
    assert r.exit_code == 0, r.output
    import h5py
    with h5py.File(out) as f:
        assert f["robots/plane/q"].shape == (1500, 0) and f.attrs["status"] == "complete"
        assert f["robots/plane/energy/kinetic"][-1] == 0.0
    assert run("compare", str(out), str(out)).exit_code == 0


def test_a_schedule_that_overflows_mid_run_stops_with_one_error(tmp_path):
    # a ramp from -1e308 to 1e308 is finite at its start and infinite after it (b - a
    # overflows): the first step's setters take -1e308, the next step's value is checked as it
    # is written into the robot's targets: one error naming the file, the schedule's key and
    # the time, exit 2
    p = tmp_path / "s.toml"
    p.write_text(BASE.replace("LF_HFE = 0.3", 'LF_HFE = { type = "ramp", start = 0.0, stop = 1.0, '
                              'start_value = -1e308, stop_value = 1e308 }'))
    out = tmp_path / "out.h5"
    r = run("run", str(p), "-q", "-o", str(out))
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert f"{p}: robot[0].pd.target.LF_HFE: the schedule gives inf at t = 0.001 s; expected " \
        "a finite number" in lines[0], r.output
    import h5py
    with h5py.File(out) as f:  # the step before it is logged, the log closed as an error
        assert f.attrs["status"] == "error" and f["time"].shape == (1,)
