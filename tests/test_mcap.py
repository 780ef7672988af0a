"""`raisimcli export --format mcap`: the file read back with the `mcap` package's reader holds,
message by message, the log's rows (joint states, torque by source, joint wrenches, contacts) at
the rows' times, and the links' transforms as forward kinematics of the log's q by Pinocchio's
own URDF reader; and the errors."""

import json
import os
import shutil

import h5py
import numpy as np
import pinocchio as pin
import pytest
from click.testing import CliRunner

from conftest import ROBOTS, SCENARIOS
from raisimcli.cli.main import cli

pytest.importorskip("mcap")
from mcap.reader import make_reader  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """quadruped_stand for 0.03 s (inverse dynamics and contacts logged) and its MCAP file."""
    folder = tmp_path_factory.mktemp("mcap")
    log = str(folder / "stand.h5")
    r = CliRunner().invoke(cli, ["run", os.path.join(SCENARIOS, "quadruped_stand.toml"), "-q",
                                 "--duration", "0.03", "-o", log])
    assert r.exit_code == 0, r.output
    out = str(folder / "stand.mcap")
    r = CliRunner().invoke(cli, ["export", log, "--format", "mcap", "-o", out, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["files"] == [out]
    messages, attachments = {}, {}
    with open(out, "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages():
            assert channel.message_encoding == "json" and schema.encoding == "jsonschema"
            messages.setdefault(channel.topic, []).append((message.log_time,
                                                           json.loads(message.data)))
        for a in reader.iter_attachments():
            attachments[a.name] = a.data
    return log, messages, attachments


def test_every_row_is_a_message_at_its_time(exported):
    log, messages, _ = exported
    with h5py.File(log) as f:
        time = f["time"][()]
    stamps = [round(t * 1e9) for t in time]
    for topic in ("/tf", "/quadruped/joint_states", "/quadruped/torque",
                  "/quadruped/joint_wrenches", "/contacts"):
        assert [t for t, _ in messages[topic]] == stamps, topic
        first = messages[topic][0][1]
        assert first.get("timestamp", first.get("transforms", [{}])[0].get("timestamp")) == \
            {"sec": 0, "nsec": stamps[0]}


def test_the_messages_hold_the_log_s_values(exported):
    log, messages, attachments = exported
    with h5py.File(log) as f:
        g = f["robots/quadruped"]
        q, u, total = g["q"][()], g["u"][()], g["torque/total"][()]
        damping, force = g["torque/damping"][()], g["inverse_dynamics/force_world"][()]
        urdf = g["urdf"][()].decode()
        start, count = f["contacts/start"][()], f["contacts/count"][()]
        contact_force = f["contacts/force"][()]
    for k, (_, m) in enumerate(messages["/quadruped/joint_states"]):
        assert m["position"] == q[k].tolist() and m["velocity"] == u[k].tolist()
        assert m["effort"] == total[k].tolist()
    for k, (_, m) in enumerate(messages["/quadruped/torque"]):
        assert m["sources"]["damping"] == damping[k].tolist()
    for k, (_, m) in enumerate(messages["/quadruped/joint_wrenches"]):
        assert [[w["x"], w["y"], w["z"]] for w in m["force_world"]] == force[k].tolist()
    for k, (_, m) in enumerate(messages["/contacts"]):
        assert len(m["contacts"]) == count[k]
        assert [[c["force"][a] for a in "xyz"] for c in m["contacts"]] == \
            contact_force[start[k]:start[k] + count[k]].tolist()
    assert messages["/quadruped/robot_description"] == [(0, {"data": urdf})]
    assert attachments == {"quadruped.urdf": urdf.encode()}


def test_the_transforms_are_forward_kinematics_of_the_logged_q(exported):
    log, messages, _ = exported
    model = pin.buildModelFromUrdf(os.path.join(ROBOTS, "quadruped.urdf"),
                                   pin.JointModelFreeFlyer())
    data = model.createData()
    with h5py.File(log) as f:
        g = f["robots/quadruped"]
        names = [n.decode() for n in g["coordinate_names"][()]]
        q = g["q"][()]
    at = {n: i for i, n in enumerate(names)}
    for k in (0, len(q) // 2, len(q) - 1):
        qp = np.zeros(model.nq)
        qp[:7] = q[k][[at[c] for c in ("root.x", "root.y", "root.z", "root.qx", "root.qy",
                                       "root.qz", "root.qw")]]
        for j in range(2, model.njoints):
            qp[model.idx_qs[j]] = q[k][at[model.names[j]]]
        pin.framesForwardKinematics(model, data, qp)
        shown = {t["child_frame_id"]: t for t in messages["/tf"][k][1]["transforms"]}
        assert len(shown) == 17 and {t["parent_frame_id"] for t in shown.values()} == {"world"}
        for name, t in shown.items():
            M = data.oMf[model.getFrameId(name, pin.FrameType.BODY)]
            np.testing.assert_allclose([t["translation"][a] for a in "xyz"], M.translation,
                                       rtol=0, atol=1e-12)
            r = t["rotation"]
            R = pin.Quaternion(r["w"], r["x"], r["y"], r["z"]).toRotationMatrix()
            np.testing.assert_allclose(R, M.rotation, rtol=0, atol=1e-12)


def test_a_file_that_is_not_ours_is_kept_and_a_log_without_robots_writes_nothing(tmp_path,
                                                                                  exported):
    log = exported[0]
    text = tmp_path / "notes.mcap"
    text.write_text("mine")
    r = CliRunner().invoke(cli, ["export", log, "--format", "mcap", "-o", str(text)])
    assert r.exit_code == 2 and "not a MCAP file of raisimcli" in r.stderr
    assert text.read_text() == "mine"
    bad = tmp_path / "bad.h5"
    shutil.copy(log, bad)
    with h5py.File(bad, "a") as f:
        del f["robots"]
    out = tmp_path / "out.mcap"
    r = CliRunner().invoke(cli, ["export", str(bad), "--format", "mcap", "-o", str(out)])
    assert r.exit_code == 2 and "holds no robot" in r.stderr and "Traceback" not in r.output
    assert sorted(os.listdir(tmp_path)) == ["bad.h5", "notes.mcap"]


def test_a_diverged_row_s_nan_is_null_and_the_file_is_strict_json(tmp_path, exported):
    bad = tmp_path / "diverged.h5"
    shutil.copy(exported[0], bad)
    with h5py.File(bad, "a") as f:
        f["robots/quadruped/q"][-1, 7] = np.nan
        f["contacts/force"][-1] = [np.inf, 0.0, np.nan]
    out = tmp_path / "d.mcap"
    r = CliRunner().invoke(cli, ["export", str(bad), "--format", "mcap", "-o", str(out)])
    assert r.exit_code == 0, r.output

    def no_constant(name):
        raise AssertionError(f"{name} in a message")
    last = {}
    with open(out, "rb") as f:
        for _, channel, message in make_reader(f).iter_messages():
            last[channel.topic] = json.loads(message.data, parse_constant=no_constant)
    assert last["/quadruped/joint_states"]["position"][7] is None
    assert last["/contacts"]["contacts"][-1]["force"] == {"x": None, "y": 0.0, "z": None}
