"""`raisimcli replay` and `view`: the link poses a replay shows against forward kinematics of the
log's q by Pinocchio's own URDF reader (a model built independently of ours), the page in a real
browser (headless Chromium driven by playwright: offline, no console error, it plays, its poses,
its pixels), real robots' meshes, and the errors."""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

import h5py
import numpy as np
import pinocchio as pin
import pytest
from click.testing import CliRunner

from raisimcli.cli.main import cli
from raisimcli.replay import html_of, write_html
from raisimcli.replay.scene import frame_rows, read_scene

from conftest import ROBOTS, SCENARIOS

ERD = os.path.join(sys.prefix, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}",
                   "site-packages", "cmeel.prefix", "share", "example-robot-data", "robots")
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _run(tmp_path, scenario: str, duration: float, name: str = "run.h5") -> str:
    out = str(tmp_path / name)
    r = CliRunner().invoke(cli, ["run", scenario, "-q", "--duration", str(duration), "-o", out])
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture(scope="module")
def drop_log(tmp_path_factory):
    """The quadruped dropped onto the ground: it falls, lands and settles in 0.8 s."""
    return _run(tmp_path_factory.mktemp("drop"), os.path.join(SCENARIOS, "quadruped_drop.toml"),
                0.8)


def _decode(packed) -> np.ndarray:
    (kind, text), = packed.items()
    return np.frombuffer(base64.b64decode(text), dtype={"f64": "<f8", "f32": "<f4",
                                                         "u32": "<u4"}[kind])


def _oracle(urdf: str, floating: bool):
    """Pinocchio's model of the URDF from its own reader, and a function of our q to its q."""
    model = pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer()) if floating else \
        pin.buildModelFromUrdf(urdf)

    def to_pin(q: np.ndarray, names: list[str]) -> np.ndarray:
        at = {n: i for i, n in enumerate(names)}
        qp = np.zeros(model.nq)
        for j in range(1, model.njoints):
            s = model.idx_qs[j]
            if model.names[j] == "root_joint":  # ours: x y z qw qx qy qz
                qp[s:s + 7] = q[[at["root.x"], at["root.y"], at["root.z"], at["root.qx"],
                                 at["root.qy"], at["root.qz"], at["root.qw"]]]
            elif model.nqs[j] == 1:
                qp[s] = q[at[model.names[j]]]
        return qp
    return model, to_pin


def _expected_poses(log: str, robot: str, urdf: str, floating: bool, rows) -> dict:
    """Each link's world placement at the log's rows `rows`, by the oracle: {row: {link: SE3}}."""
    model, to_pin = _oracle(urdf, floating)
    data = model.createData()
    with h5py.File(log) as f:
        g = f[f"robots/{robot}"]
        names = [n.decode() if isinstance(n, bytes) else n for n in g["coordinate_names"][()]]
        q = g["q"][()]
    out = {}
    for row in rows:
        pin.framesForwardKinematics(model, data, to_pin(q[row], names))
        out[row] = {model.frames[i].name: pin.SE3(data.oMf[i])
                    for i in range(model.nframes) if model.frames[i].type == pin.FrameType.BODY}
    return out


def test_a_frame_a_sixtieth_of_a_second_at_most_first_and_last_rows_kept():
    time = np.arange(1, 30001) * 0.001  # 30 s at 1 kHz
    rows = frame_rows(time, 60)
    assert rows[0] == 0 and rows[-1] == len(time) - 1
    per_second = np.bincount(np.floor(time[rows] + 1e-9).astype(int))  # [k, k + 1) s
    assert per_second.max() <= 60 and len(rows) <= 30 * 60 + 1
    assert np.diff(time[rows]).max() <= 1 / 60 + 0.001 + 1e-9  # and evenly spread
    rows = frame_rows(np.arange(1, 11) * 0.1, 60)  # a log coarser than 60 Hz: every row
    assert list(rows) == list(range(10))


@pytest.mark.parametrize("scenario, robot, urdf, floating", [
    ("quadruped_drop", "quadruped", "quadruped.urdf", True),
    ("arm7_pd", "arm", "arm7.urdf", False),
])
def test_the_replay_s_link_positions_are_forward_kinematics_of_the_logged_q(
        tmp_path, scenario, robot, urdf, floating):
    log = _run(tmp_path, os.path.join(SCENARIOS, f"{scenario}.toml"), 0.3)
    with h5py.File(log) as f:
        robot = list(f["robots"])[0]
        rows = frame_rows(f["time"][()])
    scene = read_scene(log)
    r = scene.data["robots"][0]
    links = [link["name"] for link in r["links"]]
    position = _decode(r["position"]).reshape(scene.frames, len(links), 3)
    frames = [1, len(rows) // 2, len(rows)]  # (frame 0: the initial state; frame k: rows[k - 1])
    expected = _expected_poses(log, robot, os.path.join(ROBOTS, urdf), floating,
                               [rows[k - 1] for k in frames])
    for frame, (row, links_at) in zip(frames, expected.items()):
        for i, name in enumerate(links):
            np.testing.assert_allclose(position[frame, i], links_at[name].translation, rtol=0,
                                       atol=1e-12)


def test_the_scene_has_the_ground_contacts_and_the_torque_table(drop_log):
    scene = read_scene(drop_log)
    assert scene.data["world"]["ground"] == 0.0
    contacts = scene.data["contacts"]
    count = _decode(contacts["count"])
    assert count[0] == 0 and count.max() >= 4  # the four feet once landed
    force = _decode(contacts["force"]).reshape(-1, 3)
    assert np.isclose(np.linalg.norm(force, axis=1).max() * contacts["scale"], 0.25)
    torque = scene.data["robots"][0]["torque"]
    assert "total" in torque["sources"] and torque["dofs"][6] == "LF_HAA"
    total = _decode(torque["sources"]["total"]).reshape(scene.frames, -1)
    assert np.all(np.isnan(total[0])) and np.all(np.isfinite(total[1:]))


def _browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's package) driven by playwright, with WebGL 2 by SwiftShader."""
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = _browser()
    if executable is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=[
            "--use-gl=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"])
        yield b
        b.close()


def _open(browser, path: str):
    """The page at `path` from a file:// URL with every other request refused; returns the page
    and the lists of the requests it made and of its console errors."""
    context = browser.new_context(viewport={"width": 1000, "height": 760})
    requests, errors = [], []
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    url = "file://" + os.path.abspath(path)
    context.route(re.compile(r"^(?!file://).*"), lambda route: route.abort())
    page.goto(url)
    _wait(page, "window.raisimcliReplay !== undefined && window.raisimcliReplay.ready", 60)
    return page, requests, errors, url


def _wait(page, condition: str, seconds: float) -> None:
    """Until the page's JavaScript `condition` holds (polled from here: the page's content
    security policy forbids the string evaluation of playwright's wait_for_function)."""
    import time
    end = time.monotonic() + seconds
    while not page.evaluate(condition):
        assert time.monotonic() < end, f"the page never got to {condition}"
        page.wait_for_timeout(50)


def _view_pixels(page) -> np.ndarray:
    from io import BytesIO

    import matplotlib.image as mpimg
    png = page.locator("#view").screenshot()
    return mpimg.imread(BytesIO(png), format="png")[..., :3]


def test_the_page_plays_offline_and_shows_the_links_where_the_log_has_them(
        tmp_path, drop_log, browser):
    out = str(tmp_path / "replay.html")
    write_html(drop_log, out)
    page, requests, errors, url = _open(browser, out)
    replay = "window.raisimcliReplay"
    # it plays: the time moves on by itself (at 0.1x, so that a slow frame of a busy machine
    # does not reach the end of the 0.8 s run at once)
    assert page.evaluate(f"{replay}.time()") == 0.0
    page.select_option("#speed", "0.1")
    page.evaluate(f"{replay}.play()")
    _wait(page, f"{replay}.time() > 0.02", 30)
    assert page.evaluate(f"{replay}.playing()")
    page.evaluate(f"{replay}.pause()")
    # the links' world positions, read back from the page's scene graph, at three times
    with h5py.File(drop_log) as f:
        time = f["time"][()]
    rows = frame_rows(time)
    picks = [rows[0], rows[len(rows) // 2], rows[-1]]
    expected = _expected_poses(drop_log, "quadruped", os.path.join(ROBOTS, "quadruped.urdf"),
                               True, picks)
    for row in picks:
        pose = page.evaluate(f"{replay}.poseAt({float(time[row])})")
        assert pose["t"] == pytest.approx(time[row], abs=1e-12)
        shown = pose["robots"]["quadruped"]
        assert len(shown) == 17
        for name, xyz in shown.items():
            np.testing.assert_allclose(xyz, expected[row][name].translation, rtol=0, atol=1e-6)
            x, y, z, w = pose["orientations"]["quadruped"][name]  # (stored as 32-bit floats)
            R = pin.Quaternion(w, x, y, z).toRotationMatrix()
            np.testing.assert_allclose(R, expected[row][name].rotation, rtol=0, atol=1e-6)
    # two times, two pictures, the robot in the middle of both
    pictures = []
    for t in (0.0, float(time[-1])):
        page.evaluate(f"{replay}.seek({t})")
        page.evaluate(f"{replay}.render()")
        pictures.append(_view_pixels(page))
    first, last = pictures
    assert np.mean(np.any(np.abs(first - last) > 0.05, axis=-1)) > 0.01
    for p in pictures:
        h, w = p.shape[:2]
        middle = p[h // 4:3 * h // 4, w // 4:3 * w // 4]
        saturated = middle.max(axis=-1) - middle.min(axis=-1) > 0.25  # the orange and blue
        assert saturated.mean() > 0.02, "no robot in the middle of the view"  # links, not grey
    assert requests == [url], requests
    assert errors == [], errors


def test_the_page_asks_the_browser_to_refuse_every_request(drop_log):
    page, _ = html_of(drop_log)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in policy
    assert not re.search(r"(src|href)=\"(https?:)?//", page)


def _erd(relative: str) -> str:
    path = os.path.join(ERD, relative)
    if not os.path.isfile(path):
        pytest.skip(f"example-robot-data is not installed ({path})")
    return path


@pytest.mark.parametrize("urdf, z", [
    ("go2_description/urdf/go2.urdf", 0.45),
    ("anymal_c_simple_description/urdf/anymal.urdf", 0.62),
])
def test_a_real_robot_s_replay_holds_its_meshes(tmp_path, urdf, z):
    path = _erd(urdf)
    scenario = tmp_path / "robot.toml"
    scenario.write_text(f"""schema_version = 1
[world]
dt = 0.001
[world.ground]
[[robot]]
name = "robot"
urdf = "{path}"
[robot.initial]
q = {{ "root.z" = {z} }}
""")
    log = _run(tmp_path, str(scenario), 0.02)
    r = write_html(log, str(tmp_path / "replay.html"))
    assert r.warnings == ()
    assert len(r.meshes) >= 5 and all(m.endswith((".dae", ".stl", ".obj", ".STL"))
                                      for m in r.meshes)
    scene = read_scene(log)
    drawn = {s["source"] for link in scene.data["robots"][0]["links"] for s in link["shapes"]}
    assert "visual" in drawn and "inertia" not in drawn
    for mesh in scene.data["meshes"].values():
        faces = _decode(mesh["faces"])
        assert len(faces) % 3 == 0 and faces.max() < len(_decode(mesh["vertices"])) // 3


def test_a_mesh_that_cannot_be_read_is_drawn_as_the_link_s_collision_shape(tmp_path):
    (tmp_path / "broken.stl").write_bytes(b"this is no mesh")
    urdf = (open(os.path.join(ROBOTS, "pendulum.urdf")).read()
            .replace("<collision>", '<visual><geometry><mesh filename="broken.stl"/></geometry>'
                     '</visual><collision>', 1))
    (tmp_path / "pendulum.urdf").write_text(urdf)
    shutil.copy(os.path.join(SCENARIOS, "pendulum.toml"), tmp_path / "pendulum.toml")
    text = (tmp_path / "pendulum.toml").read_text().replace("../robots/pendulum.urdf",
                                                            "pendulum.urdf")
    (tmp_path / "pendulum.toml").write_text(text)
    log = _run(tmp_path, str(tmp_path / "pendulum.toml"), 0.05)
    r = CliRunner().invoke(cli, ["replay", log, "-o", str(tmp_path / "replay.html")])
    assert r.exit_code == 0, r.output
    assert "cannot draw the mesh" in r.stderr and "broken.stl" in r.stderr
    assert "its collision shapes are drawn instead" in r.stderr
    scene = read_scene(log)
    sources = {s["source"] for link in scene.data["robots"][0]["links"] for s in link["shapes"]}
    assert "collision" in sources and scene.data["meshes"] == {str(tmp_path / "broken.stl"): None}


def _damaged(tmp_path, log: str, remove: str) -> str:
    bad = str(tmp_path / "bad.h5")
    shutil.copy(log, bad)
    with h5py.File(bad, "a") as f:
        del f[remove]
    return bad


@pytest.mark.parametrize("remove, words", [
    ("robots", "holds no robot"),
    ("robots/quadruped/urdf", "robots/quadruped/urdf is missing"),
])
def test_a_log_that_cannot_be_replayed_gets_one_error_and_no_file(tmp_path, drop_log, remove,
                                                                  words):
    bad = _damaged(tmp_path, drop_log, remove)
    out = tmp_path / "replay.html"
    write_html(drop_log, str(out))  # an earlier replay at the path stays as it was
    before = out.read_bytes()
    r = CliRunner().invoke(cli, ["replay", bad, "-o", str(out)])
    assert r.exit_code == 2
    assert words in r.stderr and bad in r.stderr and "Traceback" not in r.output
    assert out.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["bad.h5", "replay.html"]


def test_an_output_in_a_folder_that_does_not_exist_is_refused(tmp_path, drop_log):
    r = CliRunner().invoke(cli, ["replay", drop_log, "-o", str(tmp_path / "no" / "r.html")])
    assert r.exit_code == 2
    assert "does not exist" in r.stderr and not (tmp_path / "no").exists()


def test_view_serves_the_page_on_the_loopback_address(drop_log):
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "raisimcli", "view", drop_log],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line + proc.stderr.read() if proc.poll() is not None else line
        with urllib.request.urlopen(url.group(0), timeout=30) as response:
            served = response.read().decode()
        assert served == html_of(drop_log)[0]
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(url.group(0) + "other", timeout=30)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_page_s_data_is_json_even_for_a_diverged_run(tmp_path, drop_log):
    # a diverged run's last row may hold NaN: in the arrays (base64) it is a number the page
    # reads; in a JSON number (the arrows' scale) it would be no JSON, and the page would break
    bad = str(tmp_path / "diverged.h5")
    shutil.copy(drop_log, bad)
    with h5py.File(bad, "a") as f:
        f["contacts/force"][-1] = [np.nan] * 3
        f["robots/quadruped/q"][-1, 2] = np.nan
    for log in (drop_log, bad):
        page, _ = html_of(log)
        block = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>',
                          page, re.S).group(1)

        def no_constant(name):
            raise AssertionError(f"{name} in the page's JSON")
        data = json.loads(block, parse_constant=no_constant)
        assert data["frames"] == len(_decode(data["time"]))
        assert data["contacts"]["scale"] > 0


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """The standing quadruped (golden) and the same run pushed over by 600 N sideways on its
    base from t = 0.3 s (new): (folder, golden log, new log)."""
    folder = tmp_path_factory.mktemp("pushed")
    text = open(os.path.join(SCENARIOS, "quadruped_stand.toml")).read().replace(
        "../robots/", os.path.join(ROBOTS, ""))
    (folder / "stand.toml").write_text(text)
    (folder / "pushed.toml").write_text(text + """
[[robot.external]]
link = "base"
force = [0.0, 600.0, 0.0]
start = 0.3
stop = 0.4
""")
    golden = _run(folder, str(folder / "stand.toml"), 1.0, "golden.h5")
    new = _run(folder, str(folder / "pushed.toml"), 1.0, "new.h5")
    return folder, golden, new


def test_the_compare_report_replays_both_runs_from_the_first_failing_time(pushed, browser):
    folder, golden, new = pushed
    report = str(folder / "report.html")
    r = CliRunner().invoke(cli, ["compare", golden, new, "--html", report, "-q"])
    assert r.exit_code == 1, r.output
    # the push acts from the step that starts at t = 0.3 s: the first row that differs ends it
    assert "opening at t = 0.301 s" in open(report).read()
    context = browser.new_context(viewport={"width": 1100, "height": 1000})
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto("file://" + report)
    frame = page.frame(url=lambda u: u.startswith("about:srcdoc")) or page.frames[1]
    _wait(frame, "window.raisimcliReplay !== undefined && window.raisimcliReplay.ready", 60)
    times = np.array(frame.evaluate("window.raisimcliReplay.times()"))
    shown = frame.evaluate("window.raisimcliReplay.time()")
    assert shown == times[times <= 0.301 + 1e-12].max()
    assert frame.evaluate("window.raisimcliReplay.inView()") == {"quadruped": True,
                                                               "quadruped (golden)": True}
    end = frame.evaluate(f"window.raisimcliReplay.poseAt({times[-1]})")["robots"]
    assert abs(end["quadruped"]["base"][1] - end["quadruped (golden)"]["base"][1]) > 0.2
    assert errors == []


def test_a_folder_compare_writes_a_report_per_differing_log_and_an_index(tmp_path, pushed):
    _, golden, new = pushed
    for side, second in (("golden", golden), ("new", new)):
        (tmp_path / side).mkdir()
        shutil.copy(golden, tmp_path / side / "stand.h5")
        shutil.copy(second, tmp_path / side / "pushed.h5")
    out = tmp_path / "reports"
    r = CliRunner().invoke(cli, ["compare", str(tmp_path / "golden"), str(tmp_path / "new"),
                                 "--html", str(out) + "/", "-j", "1", "-q"])
    assert r.exit_code == 1, r.output
    assert sorted(os.listdir(out)) == ["index.html", "pushed.html"]
    index = (out / "index.html").read_text()
    assert "<a href='pushed.html'>pushed</a>" in index and "0.301 s" in index
    assert "stand</td><td class='pass'>pass" in index
    assert "id='replay'" in (out / "pushed.html").read_text()
    r = CliRunner().invoke(cli, ["compare", str(tmp_path / "golden"), str(tmp_path / "new"),
                                 "--html", str(tmp_path / "index.html"), "-j", "1"])
    assert r.exit_code == 2 and "end the name with /" in r.stderr
