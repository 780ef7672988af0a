"""Figures of a log, with matplotlib (the extra `raisimcli[plot]`): which torque a joint saw and
why, the state against its limits, energies, contacts, joint wrenches.

Every function takes an open log (raisimcli.log.open_log) and returns a matplotlib Figure, which a
notebook shows as it is and `Figure.savefig` writes as PNG, SVG or PDF. No pyplot state is used.

    from raisimcli.log import open_log
    from raisimcli.plot import torque_figure
    with open_log("out/quadruped_pd.h5") as log:
        torque_figure(log, joints=["LF_KFE"]).savefig("knee.png")
"""

from __future__ import annotations

import numpy as np

from raisimcli.errors import LogError, UsageError
from raisimcli.log.reader import _text

# the rows of the torque table (the spec's step 5), in its order, with one colour each in every
# figure
SOURCES = ("feedforward_pd", "damping", "actuators", "springs", "external", "joint_friction",
           "joint_limits", "contacts", "constraints")
SOURCE_LABELS = {"feedforward_pd": "feedforward and PD", "damping": "damping",
                 "actuators": "actuators", "springs": "springs", "external": "external forces",
                 "joint_friction": "joint friction", "joint_limits": "joint limits",
                 "contacts": "contacts", "constraints": "loop and mimic constraints"}
SOURCE_COLORS = {"feedforward_pd": "#1f77b4", "damping": "#ff7f0e", "actuators": "#2ca02c",
                 "springs": "#9467bd", "external": "#8c564b", "joint_friction": "#e377c2",
                 "joint_limits": "#7f7f7f", "contacts": "#bcbd22", "constraints": "#17becf"}
KINDS = ("torque", "state", "energy", "contacts", "wrench")
DEFAULT_JOINTS = 6   # panels when no joint is named: those with the largest torque
MAX_PANELS = 12
# buckets of samples across a figure, about its width in pixels at 100 dpi: a curve of more
# samples is drawn with each bucket's lowest and highest sample only (_drawn)
PIXELS = 1000


def _drawn(n: int, *series) -> np.ndarray | slice:
    """Which of n samples to draw of curves that share them (`series`, each (n,)): all of them up
    to 2 PIXELS samples; beyond, of each of PIXELS buckets of consecutive samples, the one where
    a series is lowest and the one where it is highest, for every series (a spike of one sample
    stays, at its height), the first NaN of a bucket (a gap stays a gap), and the first and last
    sample. A figure of a long log is then as large as one of a short log, and looks the same at
    its width; zoomed in, it shows the buckets' extremes."""
    if n <= 2 * PIXELS:
        return slice(None)
    edges = np.linspace(0, n, PIXELS + 1).astype(np.int64)
    bucket = np.repeat(np.arange(PIXELS), np.diff(edges))
    keep = np.zeros(n, dtype=bool)
    keep[0] = keep[-1] = True
    for y in series:
        y = np.asarray(y, dtype=float)
        nan = np.isnan(y)
        for extreme, hit in ((np.fmin, None), (np.fmax, None), (None, nan)):
            if hit is None:
                value = extreme.reduceat(y, edges[:-1])[bucket]
                hit = y == value
            at = np.flatnonzero(hit)
            if len(at):
                _, first = np.unique(bucket[at], return_index=True)
                keep[at[first]] = True
    return np.flatnonzero(keep)


def _bucket_means(t: np.ndarray, y: np.ndarray, buckets: int = PIXELS // 2):
    """(t, y) as they are up to 2 `buckets` samples; beyond, the mean time and the mean of y in
    each of `buckets` buckets of consecutive samples: how the torque figure draws its stacked
    areas of a long log (their black total line keeps every spike, _drawn)."""
    n = len(t)
    if n <= 2 * buckets:
        return t, y
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)[:-1]
    counts = np.diff(np.append(edges, n))
    return (np.add.reduceat(t, edges) / counts,
            np.add.reduceat(y, edges, axis=0) / counts.reshape((-1,) + (1,) * (y.ndim - 1)))


def _robust_peak(values: np.ndarray, axis=0) -> np.ndarray:
    """The 95th percentile of |values| over time: what picks the joints shown by default, so that
    a landing spike of a few steps does not decide over the steady state."""
    a = np.abs(np.asarray(values, dtype=float))
    if not len(a):
        return np.zeros(a.shape[1:])
    return np.nanpercentile(a, 95, axis=axis)


def _figure(rows: int, cols: int = 1, title: str = ""):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError("plotting needs matplotlib: pip install 'raisimcli[plot]'") from None
    fig = Figure(figsize=(7.5 * cols, 1.9 * rows + 1.2), layout="constrained")
    axes = fig.subplots(rows, cols, sharex=True, squeeze=False)
    if title:
        fig.suptitle(title)
    return fig, axes


def _title(log, what: str, robot: str | None = None) -> str:
    name = _text(log.f.attrs.get("scenario_name", "")) or log.path
    return f"{name}: {what}" + (f" of {robot}" if robot else "")


def _window(log, t_from, t_to) -> np.ndarray:
    t = log.time
    keep = np.ones(t.shape, dtype=bool)
    if t_from is not None:
        keep &= t >= t_from
    if t_to is not None:
        keep &= t <= t_to
    if not keep.any():
        raise UsageError(f"no logged step between --from {t_from} and --to {t_to} (the log "
                         f"covers {t[0] if len(t) else 0:g} to {t[-1] if len(t) else 0:g} s)")
    return keep


def _robot(log, name):
    names = log.robot_names
    if not names:
        raise LogError(f"{log.path}: the log has no robot")
    if name is None:
        return log.robot(names[0])
    if name not in names:
        raise UsageError(f"--robot {name!r}: the log's robots are {', '.join(names)}")
    return log.robot(name)


def _pick(names: list[str], wanted, score: np.ndarray | None, exclude=()) -> list[int]:
    """Column indices: the named ones, or the DEFAULT_JOINTS with the largest score."""
    if wanted:
        missing = [w for w in wanted if w not in names]
        if missing:
            raise UsageError(f"--joint {missing[0]!r}: not in the log; it has {', '.join(names)}")
        if len(wanted) > MAX_PANELS:
            raise UsageError(f"at most {MAX_PANELS} joints in one figure, got {len(wanted)}")
        return [names.index(w) for w in wanted]
    candidates = [k for k, n in enumerate(names) if not n.startswith(tuple(exclude))]
    if score is not None:
        candidates.sort(key=lambda k: -score[k])
    return sorted(candidates[:DEFAULT_JOINTS])


def _signal(robot, path: str):
    if path not in robot.signals():
        raise LogError(f"robot {robot.name!r} has no logged signal {path!r}")
    return robot.signal(path)


def torque_figure(log, robot: str | None = None, joints=None, t_from=None, t_to=None):
    """Per joint, the torque over each step by source (spec step 5) as signed stacked areas
    (positive parts stacked up, negative parts down) and the total as a black line."""
    r = _robot(log, robot)
    keep = _window(log, t_from, t_to)
    t = log.time[keep]
    total = _signal(r, "torque/total")
    rows = {s: r.signal(f"torque/{s}").data[keep] for s in SOURCES if f"torque/{s}" in r.signals()}
    floating = tuple(n.split(".")[0] + "." for n in total.names if n.endswith(".vx"))
    cols = _pick(total.names, joints, _robust_peak(total.data[keep]), floating)
    fig, axes = _figure(len(cols), 1, _title(log, "joint torque by source", r.name))
    units = total.units if isinstance(total.units, list) else [total.units] * len(total.names)
    used = []
    for ax, k in zip(axes[:, 0], cols):
        tot = total.data[keep][:, k]
        up = down = None
        for s, data in rows.items():
            y = data[:, k]
            if not np.any(y):
                continue
            td, pos = _bucket_means(t, np.clip(y, 0, None))
            _, neg = _bucket_means(t, np.clip(y, None, 0))
            if up is None:
                up, down = np.zeros(td.shape), np.zeros(td.shape)
            if np.any(pos):
                ax.fill_between(td, up, up + pos, color=SOURCE_COLORS[s], linewidth=0,
                                label=SOURCE_LABELS[s], gid=s)
                up = up + pos
            if np.any(neg):
                ax.fill_between(td, down, down + neg, color=SOURCE_COLORS[s], linewidth=0,
                                label=SOURCE_LABELS[s], gid=s)
                down = down + neg
            if s not in used:
                used.append(s)
        at = _drawn(len(t), tot)
        ax.plot(t[at], tot[at], color="black", linewidth=1.0, label="total", gid="total")
        ax.axhline(0.0, color="0.6", linewidth=0.5)
        ax.set_ylabel(f"{total.names[k]}\n[{units[k]}]")
    _legend(fig, [(SOURCE_LABELS[s], SOURCE_COLORS[s]) for s in SOURCES if s in used])
    axes[-1, 0].set_xlabel("time [s]")
    return fig


def _legend(fig, entries, line=("total", "black")) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = [Patch(color=c, label=label) for label, c in entries]
    if line:
        handles.append(Line2D([], [], color=line[1], label=line[0]))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(5, len(handles)),
               frameon=False)


def state_figure(log, robot: str | None = None, joints=None, t_from=None, t_to=None):
    """Per joint, its coordinate q and velocity u, with the position and velocity limits where
    the joint has them (dashed)."""
    r = _robot(log, robot)
    keep = _window(log, t_from, t_to)
    t = log.time[keep]
    q, u = _signal(r, "q"), _signal(r, "u")
    lower, upper, vmax = (r.group[f"limits/{n}"][()] if "limits" in r.group else
                          np.full(len(u.names), np.nan) for n in ("lower", "upper", "velocity"))
    one_dof = [n for n in u.names if n in q.names]  # 1-DoF joints: the same name in q and u
    cols = _pick(one_dof, joints, np.ptp(q.data[keep][:, [q.names.index(n) for n in one_dof]],
                                         axis=0) if one_dof else None)
    if not cols:
        raise UsageError(f"robot {r.name!r} has no revolute or prismatic joint to plot")
    fig, axes = _figure(len(cols), 2, _title(log, "joint state", r.name))
    q_units = q.units if isinstance(q.units, list) else [q.units] * len(q.names)
    u_units = u.units if isinstance(u.units, list) else [u.units] * len(u.names)
    for row, k in enumerate(cols):
        name = one_dof[k]
        iq, iu = q.names.index(name), u.names.index(name)
        ax_q, ax_u = axes[row]
        qk, uk = q.data[keep][:, iq], u.data[keep][:, iu]
        at, au = _drawn(len(t), qk), _drawn(len(t), uk)
        ax_q.plot(t[at], qk[at], color="#1f77b4", gid="q")
        ax_u.plot(t[au], uk[au], color="#d62728", gid="u")
        for value in (lower[iu], upper[iu]):
            if np.isfinite(value):
                ax_q.axhline(value, color="black", linestyle="--", linewidth=0.8, gid="limit")
        if np.isfinite(vmax[iu]):
            for value in (-vmax[iu], vmax[iu]):
                ax_u.axhline(value, color="black", linestyle="--", linewidth=0.8, gid="limit")
        ax_q.set_ylabel(f"{name} q\n[{q_units[iq]}]")
        ax_u.set_ylabel(f"{name} u\n[{u_units[iu]}]")
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    return fig


def energy_figure(log, robot: str | None = None, joints=None, t_from=None, t_to=None):
    """Per robot, its kinetic, potential and total energy."""
    keep = _window(log, t_from, t_to)
    t = log.time[keep]
    names = [robot] if robot else log.robot_names
    fig, axes = _figure(len(names), 1, _title(log, "energy"))
    for ax, name in zip(axes[:, 0], names):
        r = _robot(log, name)
        ke = _signal(r, "energy/kinetic").data[keep]
        pe = _signal(r, "energy/potential").data[keep]
        at = _drawn(len(t), ke, pe, ke + pe)
        ax.plot(t[at], ke[at], label="kinetic", gid="kinetic", color="#1f77b4")
        ax.plot(t[at], pe[at], label="potential", gid="potential", color="#2ca02c")
        ax.plot(t[at], (ke + pe)[at], label="total", gid="total", color="black")
        ax.set_ylabel(f"{name}\n[J]")
        # (beside the axes, not over the curves)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    axes[-1, 0].set_xlabel("time [s]")
    return fig


def contacts_figure(log, robot: str | None = None, joints=None, t_from=None, t_to=None):
    """The number of contacts, the total normal force on each body, and the deepest
    penetration, over time."""
    if "contacts" not in log.f:
        raise LogError(f"{log.path}: no contacts were logged")
    keep = _window(log, t_from, t_to)
    t = log.time[keep]
    g = log.f["contacts"]
    count, start = g["count"][()], g["start"][()]
    force, normal = g["force"][()], g["normal"][()]
    depth, body = g["penetration"][()], g["body_a"][()]
    names = [_text(b) for b in g["body_names"][()]]
    rows = np.nonzero(keep)[0]
    fn = np.einsum("ij,ij->i", force, normal) if len(force) else np.zeros(0)
    bodies = sorted(set(body.tolist()))
    per_body = np.zeros((len(rows), len(bodies)))
    deepest = np.zeros(len(rows))
    for i, row in enumerate(rows):
        sl = slice(start[row], start[row] + count[row])
        for b, f in zip(body[sl], fn[sl]):
            per_body[i, bodies.index(b)] += f
        deepest[i] = depth[sl].max() if count[row] else 0.0
    fig, axes = _figure(3, 1, _title(log, "contacts"))
    counts = count[keep]
    at = _drawn(len(t), counts)
    axes[0, 0].step(t[at], counts[at], where="post", color="black", gid="count")
    axes[0, 0].set_ylabel("contacts")
    at = _drawn(len(t), *per_body.T)
    for j, b in enumerate(bodies):
        axes[1, 0].plot(t[at], per_body[at, j], label=names[b], gid=names[b])
    axes[1, 0].set_ylabel("normal force\n[N]")
    if bodies:
        axes[1, 0].legend(loc="best", fontsize="small", frameon=False,
                          ncols=min(2, len(bodies)))
    at = _drawn(len(t), deepest)
    # in the unit that shows it without a power of ten over the axis: mm, um or nm
    top = np.nanmax(np.abs(deepest)) if len(deepest) else 0.0
    scale, unit = (1e3, "mm") if top >= 1e-4 else (1e6, "µm") if top >= 1e-7 else (1e9, "nm")
    axes[2, 0].plot(t[at], deepest[at] * scale, color="#d62728", gid="penetration")
    axes[2, 0].ticklabel_format(axis="y", style="plain", useOffset=False)
    axes[2, 0].set_ylabel(f"deepest\npenetration [{unit}]")
    axes[-1, 0].set_xlabel("time [s]")
    return fig


def wrench_figure(log, robot: str | None = None, joints=None, t_from=None, t_to=None):
    """Per joint, the force and torque the parent transmits to the child (inverse dynamics,
    world frame), x, y and z."""
    r = _robot(log, robot)
    if "inverse_dynamics/force_world" not in r.signals():
        raise LogError(f"robot {r.name!r}: no joint wrenches in the log (run the scenario with "
                       "inverse_dynamics = true)")
    keep = _window(log, t_from, t_to)
    t = log.time[keep]
    force = r.signal("inverse_dynamics/force_world")
    torque = r.signal("inverse_dynamics/torque_world")
    cols = _pick(force.names, joints, _robust_peak(torque.data[keep]).max(axis=1))
    fig, axes = _figure(len(cols), 2, _title(log, "joint wrenches (world frame)", r.name))
    colors = ("#d62728", "#2ca02c", "#1f77b4")
    for row, k in enumerate(cols):
        f, tq = force.data[keep][:, k], torque.data[keep][:, k]
        af, at = _drawn(len(t), *f.T), _drawn(len(t), *tq.T)
        for c in range(3):
            axes[row, 0].plot(t[af], f[af, c], color=colors[c], label="xyz"[c],
                              gid=f"force_{'xyz'[c]}")
            axes[row, 1].plot(t[at], tq[at, c], color=colors[c], label="xyz"[c],
                              gid=f"torque_{'xyz'[c]}")
        axes[row, 0].set_ylabel(f"{force.names[k]} force\n[N]")
        axes[row, 1].set_ylabel(f"{force.names[k]} torque\n[N m]")
    axes[0, 1].legend(loc="upper right", fontsize="small", frameon=False)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    return fig


FIGURES = {"torque": torque_figure, "state": state_figure, "energy": energy_figure,
           "contacts": contacts_figure, "wrench": wrench_figure}


def figure(log, kind: str = "torque", **kw):
    """The figure of one of KINDS."""
    if kind not in FIGURES:
        raise UsageError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return FIGURES[kind](log, **kw)


def comparison_figure(golden, new, path: str, tolerance, time=None, max_columns: int = 3,
                      names=None, units=None, per_event: bool = False):
    """Golden against new over time for the worst columns of a dataset, and their difference
    with the tolerance band atol + rtol |golden|. `golden`, `new`: (T, ...) arrays; `path`: the
    dataset's name for the title; `tolerance`: an object with rtol, atol; `names`: of the
    columns of the first axis after time; `units`: one per column of the flattened rows, or one
    for all; `time`: each row's time (the x axis; the row's index without it); `per_event`: rows
    are events (contacts), several at one time, drawn as points rather than lines. Where golden
    and new are both NaN they agree (as compare counts them); a curve of many rows is drawn at
    its extremes per pixel column (_drawn)."""
    shape = np.shape(golden)[1:]
    g = np.asarray(golden, dtype=float).reshape(len(golden), -1)
    n = np.asarray(new, dtype=float).reshape(len(new), -1)
    t = np.arange(len(g)) if time is None or len(time) != len(g) else np.asarray(time)
    with np.errstate(invalid="ignore"):
        err = np.abs(n - g)
    err = np.where(np.isnan(g) & np.isnan(n), 0.0, np.nan_to_num(err, nan=np.inf))
    worst = list(np.argsort(-err.max(axis=0), kind="stable")[:max_columns])
    if units is None or isinstance(units, str):
        units = [units or ""] * g.shape[1]
    fig, axes = _figure(2, 1, f"{path}: golden vs new")
    band = tolerance.atol + tolerance.rtol * np.abs(g)

    def label(k):
        unit = f" [{units[k]}]" if units[k] else ""
        if names is None or not shape:
            return f"[{k}]{unit}"
        col, rest = divmod(k, int(np.prod(shape[1:])) if len(shape) > 1 else 1)
        name = names[col] if col < len(names) else str(col)
        return name + (f".{'xyz'[rest]}" if len(shape) > 1 and shape[-1] == 3 else "") + unit

    style = {"linestyle": "none", "marker": ".", "markersize": 3} if per_event else {}
    for k in worst:
        d = n[:, k] - g[:, k]
        at = _drawn(len(t), g[:, k], n[:, k], d, band[:, k])
        line, = axes[0, 0].plot(t[at], g[at, k], label=f"golden {label(k)}", gid=f"golden_{k}",
                                **style)
        axes[0, 0].plot(t[at], n[at, k], linestyle="none" if per_event else "--",
                        color=line.get_color(), label=f"new {label(k)}", gid=f"new_{k}",
                        **{key: v for key, v in style.items() if key != "linestyle"})
        axes[1, 0].plot(t[at], d[at], color=line.get_color(), gid=f"difference_{k}", **style)
        if not per_event:
            axes[1, 0].fill_between(t[at], -band[at, k], band[at, k], color=line.get_color(),
                                    alpha=0.15, linewidth=0)
    axes[0, 0].legend(loc="best", fontsize="small", frameon=False, ncols=2)
    drawn = {units[k] for k in worst}
    unit = f" [{drawn.pop()}]" if len(drawn) == 1 and "" not in drawn else ""
    axes[0, 0].set_ylabel(f"{path.rsplit('/', 1)[-1]}{unit}")
    axes[1, 0].set_ylabel(f"new - golden{unit}\n(band: tolerance)")
    axes[1, 0].set_xlabel("time [s]" if time is not None else "row")
    return fig


__all__ = ["KINDS", "SOURCE_COLORS", "SOURCE_LABELS", "comparison_figure", "contacts_figure",
           "energy_figure", "figure", "state_figure", "torque_figure", "wrench_figure"]
