"""Figures of logs, checked through matplotlib's objects: the panels, their labels, and that the
plotted data is the log's data; and the HTML report of compare on a perturbed log."""

import html.parser
import os

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from conftest import SCENARIOS
from raisimcli.cli.main import cli
from raisimcli.log import open_log

pytest.importorskip("matplotlib")
from raisimcli.plot import SOURCE_LABELS, figure  # noqa: E402


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("plots")
    out = {}
    for name, extra in (("quadruped_pd", []), ("quadruped_stand", []), ("arm7_pd", []),
                        ("fourbar", [])):
        p = d / f"{name}.h5"
        r = run("run", os.path.join(SCENARIOS, f"{name}.toml"), "-q", "--duration", "0.3",
                "-o", p, *extra)
        assert r.exit_code == 0, r.output
        out[name] = p
    return out


def _data_panels(fig):
    return [ax for ax in fig.axes if ax.get_ylabel()]


def test_torque_figure_stacks_the_sources_and_draws_the_total(logs):
    with open_log(str(logs["quadruped_pd"])) as log, h5py.File(logs["quadruped_pd"]) as f:
        fig = figure(log, "torque", joints=["LF_KFE", "RF_HFE"])
        dofs = [d.decode() for d in f["robots/quadruped/dof_names"][()]]
        panels = _data_panels(fig)
        assert [ax.get_ylabel().split("\n")[0] for ax in panels] == ["LF_KFE", "RF_HFE"]
        assert all("[N m]" in ax.get_ylabel() for ax in panels)
        assert "quadruped_pd" in fig._suptitle.get_text() and "quadruped" in \
            fig._suptitle.get_text()
        assert panels[-1].get_xlabel() == "time [s]"
        for ax, joint in zip(panels, ["LF_KFE", "RF_HFE"]):
            k = dofs.index(joint)
            total = next(line for line in ax.lines if line.get_gid() == "total")
            assert np.array_equal(total.get_xdata(), f["time"][()])
            assert np.array_equal(total.get_ydata(), f["robots/quadruped/torque/total"][:, k])
            # the positive stack reaches the sum of the positive parts of every source
            pos = sum(np.clip(f[f"robots/quadruped/torque/{s}"][:, k], 0, None)
                      for s in SOURCE_LABELS)
            top = max(c.get_paths()[0].vertices[:, 1].max() for c in ax.collections
                      if c.get_gid() in SOURCE_LABELS)
            assert np.isclose(top, pos.max(), rtol=1e-12, atol=1e-12)
        legend = [t.get_text() for t in fig.legends[0].get_texts()]
        assert set(legend) <= set(SOURCE_LABELS.values()) | {"total"}
        assert "damping" in legend and "feedforward and PD" in legend


def test_default_torque_joints_are_those_with_the_largest_torque(logs):
    with open_log(str(logs["arm7_pd"])) as log, h5py.File(logs["arm7_pd"]) as f:
        panels = _data_panels(figure(log, "torque"))
        total = np.abs(f["robots/arm7/torque/total"][()]).max(axis=0)
        dofs = [d.decode() for d in f["robots/arm7/dof_names"][()]]
        expected = sorted(np.argsort(-total)[:6])
        assert [ax.get_ylabel().split("\n")[0] for ax in panels] == [dofs[k] for k in expected]


def test_state_figure_draws_q_u_and_the_limits(logs):
    with open_log(str(logs["arm7_pd"])) as log, h5py.File(logs["arm7_pd"]) as f:
        fig = figure(log, "state", joints=["a2", "a4"])
        panels = _data_panels(fig)
        assert len(panels) == 4
        q = next(line for line in panels[0].lines if line.get_gid() == "q")
        assert np.array_equal(q.get_ydata(), f["robots/arm7/q"][:, 1])
        limits = sorted(line.get_ydata()[0] for line in panels[0].lines
                        if line.get_gid() == "limit")
        assert limits == [-2.09, 2.09]
        vlim = sorted(line.get_ydata()[0] for line in panels[1].lines if line.get_gid() == "limit")
        assert vlim == [-1.71, 1.71]


def test_energy_contacts_and_wrench_figures(logs):
    with open_log(str(logs["quadruped_stand"])) as log, h5py.File(logs["quadruped_stand"]) as f:
        fig = figure(log, "energy")
        total = next(line for line in _data_panels(fig)[0].lines if line.get_gid() == "total")
        ke, pe = f["robots/quadruped/energy/kinetic"][()], f["robots/quadruped/energy/potential"][()]
        assert np.allclose(total.get_ydata(), ke + pe, rtol=1e-15, atol=0)
        fig = figure(log, "contacts")
        count = next(line for line in _data_panels(fig)[0].lines if line.get_gid() == "count")
        assert np.array_equal(count.get_ydata(), f["contacts/count"][()])
        feet = [line.get_gid() for line in _data_panels(fig)[1].lines]
        assert sorted(feet) == sorted(f"quadruped/{x}_foot" for x in ("LF", "RF", "LH", "RH"))
        # the four feet carry the weight at the end (22.6 kg)
        end = sum(line.get_ydata()[-1] for line in _data_panels(fig)[1].lines)
        assert abs(end - 221.706) < 1.0
        fig = figure(log, "wrench", joints=["LF_KFE"])
        fz = next(line for line in _data_panels(fig)[0].lines if line.get_gid() == "force_z")
        joints = [j.decode() for j in f["robots/quadruped/joint_names"][()]]
        k = joints.index("LF_KFE")
        assert np.array_equal(fz.get_ydata(), f["robots/quadruped/inverse_dynamics/force_world"][:, k, 2])


@pytest.mark.parametrize("name", ["quadruped_pd", "quadruped_stand", "arm7_pd", "fourbar"])
@pytest.mark.parametrize("kind", ["torque", "state", "energy", "contacts", "wrench"])
def test_every_kind_renders_or_says_why_not(logs, tmp_path, name, kind):
    out = tmp_path / f"{kind}.png"
    r = run("plot", logs[name], "--kind", kind, "-o", out, "--from", "0.05", "--to", "0.25")
    if r.exit_code == 0:
        assert out.stat().st_size > 5000
    else:  # a log without contacts or joint wrenches: one message, exit 2
        assert r.exit_code == 2 and ("no contacts" in r.output or "no joint wrenches" in r.output)
        assert not out.exists()


def test_plot_errors(logs, tmp_path):
    r = run("plot", logs["arm7_pd"], "-o", tmp_path / "x.jpg")
    assert r.exit_code == 2 and ".png, .svg, .pdf" in r.output
    r = run("plot", logs["arm7_pd"], "-o", tmp_path / "x.png", "--joint", "elbow")
    assert r.exit_code == 2 and "--joint 'elbow'" in r.output
    r = run("plot", logs["arm7_pd"], "-o", tmp_path / "x.png", "--from", "5")
    assert r.exit_code == 2 and "no logged step" in r.output
    r = run("plot", logs["arm7_pd"], "-o", tmp_path / "x.svg", "--kind", "state")
    assert r.exit_code == 0 and (tmp_path / "x.svg").read_text().lstrip().startswith("<?xml")


class _Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.refs, self.figures, self.stack = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "figure":
            self.figures.append(dict(attrs).get("id"))
        for k, v in attrs:
            if k in ("src", "href", "xlink:href") and v is not None:
                self.refs.append(v)


def test_html_report_of_a_perturbed_log(logs, tmp_path):
    golden = logs["quadruped_pd"]
    new = tmp_path / "new.h5"
    new.write_bytes(golden.read_bytes())
    with h5py.File(new, "r+") as f:
        for path in ("robots/quadruped/q", "robots/quadruped/torque/damping"):
            d = f[path]
            x = d[()]
            x[100:, 8] += 1e-6
            d[...] = x
    report = tmp_path / "report.html"
    r = run("compare", golden, new, "--html", report)
    assert r.exit_code == 1
    text = report.read_text()
    parser = _Collect()
    parser.feed(text)
    assert text.startswith("<!DOCTYPE html>") and parser.tags[0] == "html"
    assert all(ref.startswith("#") for ref in parser.refs), parser.refs  # self-contained
    assert "<script" not in text and "<link" not in text and "<img" not in text
    assert sorted(parser.figures) == ["robots/quadruped/q", "robots/quadruped/torque/damping"]
    assert text.count("<svg") == 2
    assert "LF_KFE" in text  # the worst column named in the legend


def test_html_report_argument_checked_before_comparing(logs, tmp_path):
    r = run("compare", logs["arm7_pd"], logs["arm7_pd"], "--html", tmp_path / "no" / "r.html")
    assert r.exit_code == 2 and "--html" in r.output


def test_a_long_curve_is_drawn_at_its_extremes_per_pixel_column():
    # 200,000 samples of noise with a one-sample spike and a gap of NaN: the samples drawn are
    # at most two per bucket and series (and the ends), the spike is among them at its height,
    # the gap stays a gap, and every bucket's min and max are drawn
    from raisimcli.plot import PIXELS, _drawn
    rng = np.random.default_rng(3)
    n = 200_000
    y, z = rng.normal(size=n), rng.normal(size=n)
    y[123_457] = 50.0
    z[50_000:50_010] = np.nan
    at = _drawn(n, y, z)
    assert len(at) <= 2 * 2 * PIXELS + 2 + PIXELS
    assert 123_457 in at and 0 in at and n - 1 in at
    assert np.isnan(z[at]).any()
    edges = np.linspace(0, n, PIXELS + 1).astype(int)
    for a, b in zip(edges[:-1], edges[1:]):
        drawn = y[at[(at >= a) & (at < b)]]
        assert drawn.max() == y[a:b].max() and drawn.min() == y[a:b].min()
    assert _drawn(2 * PIXELS, y[:2 * PIXELS]) == slice(None)  # (a short curve: every sample)


def test_the_report_figure_of_a_long_dataset_stays_small_and_shows_its_spike():
    # compare --html of two 30 s logs wrote 9 MB (140 MB for longer ones): each curve is now
    # drawn at most at twice the figure's pixel columns, and a one-step difference still shows
    import io

    from raisimcli.log.compare import Tolerance
    from raisimcli.plot import comparison_figure
    rng = np.random.default_rng(4)
    golden = rng.normal(size=(30_000, 18)).cumsum(axis=0)
    new = golden.copy()
    new[17_321, 4] += 3.0
    fig = comparison_figure(golden, new, "robots/r/q", Tolerance(1e-9, 1e-12),
                            time=np.arange(30_000) * 1e-3, units="rad")
    difference = [ln for ln in fig.axes[1].lines if ln.get_gid() == "difference_4"][0]
    assert difference.get_ydata().max() == 3.0
    assert fig.axes[0].get_ylabel() == "q [rad]"
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    assert len(buf.getvalue()) < 1_000_000


def test_both_nan_is_no_difference_in_the_report_figure():
    # compare counts NaN == NaN as equal: such a column is not drawn as the worst one
    from raisimcli.log.compare import Tolerance
    from raisimcli.plot import comparison_figure
    golden = np.zeros((100, 3))
    new = golden.copy()
    golden[:, 0] = new[:, 0] = np.nan
    new[50, 2] = 1.0
    fig = comparison_figure(golden, new, "x", Tolerance(0, 0), max_columns=1)
    assert [ln.get_gid() for ln in fig.axes[1].lines] == ["difference_2"]
