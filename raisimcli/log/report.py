"""The HTML report of `raisimcli compare --html`: one self-contained file (figures inline as
SVG, no network, no other file) with the summary table and, for each failing dataset, golden
against new over time for its worst columns and their difference with the tolerance band."""

from __future__ import annotations

import html
import io

import numpy as np

from raisimcli.log.reader import open_hdf5
from raisimcli.log.compare import Comparison, Tolerance, _column_names
from raisimcli.writing import marked, output_file

STYLE = """body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:3px 8px}
th{background:#eee}.pass{color:#080}.fail,.missing,.extra,.structure{color:#c00;font-weight:bold}
figure{margin:1.5em 0}svg{max-width:100%;height:auto}
#replay{width:100%;height:760px;border:1px solid #ccc}"""


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and the DOCTYPE: inline in HTML


def _units(dataset):
    """The units of a dataset's columns as the log gives them (`column_units`, one per column of
    a row flattened, or `units` for all), or None."""
    from raisimcli.log.reader import _text
    per = dataset.attrs.get("column_units")
    if per is not None:
        per = [_text(u) for u in np.ravel(per)]
        size = int(np.prod(dataset.shape[1:])) if dataset.ndim > 1 else 1
        if len(per) == size:
            return per
        if size % len(per) == 0:  # (a unit per name, the name's x y z sharing it)
            return [u for u in per for _ in range(size // len(per))]
        return None
    one = dataset.attrs.get("units")
    return _text(one) if one is not None else None


def _head(verdict: str, golden: str, new: str) -> str:
    """A report's start, to the paragraph that names the two sides (left open)."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="raisimcli">
<title>raisimcli compare: {verdict}</title>
<style>{STYLE}</style></head><body>
<h1>raisimcli compare: {verdict}</h1>
<p>golden: {html.escape(golden)}<br>new: {html.escape(new)}<br>"""


def _replay(c: Comparison) -> str:
    """The report's replay section: the new log's robots solid and the golden log's translucent
    in one view (raisimcli.replay), opening at the first time a dataset fails; a paragraph
    saying why when the logs cannot be replayed."""
    from raisimcli.errors import RaisimcliError
    from raisimcli.replay import html_of
    start = c.first_failing_time
    try:
        page, _ = html_of(c.new, ghost=c.golden, start=start or 0.0)
    except RaisimcliError as e:
        return f"<h2>Replay</h2><p>No replay: {html.escape(str(e))}</p>"
    when = "" if start is None else f", opening at t = {start:.6g} s, where the first dataset fails"
    return (f"<h2>Replay</h2><p>The new run solid, the golden run translucent{when}.</p>"
            f"<iframe id='replay' title='replay of both runs' sandbox='allow-scripts' "
            f"srcdoc=\"{html.escape(page, quote=True)}\"></iframe>")


def html_report(c: Comparison, path: str, max_figures: int = 20, inputs: tuple = ()) -> int:
    """Write the report of comparison `c` to `path` (raisimcli.writing.output_file, never over
    one of `inputs`); returns the number of figures."""
    from raisimcli.plot import comparison_figure
    rows = []
    for r in sorted(c.results, key=lambda r: (r.ok, r.path)):
        tol = f"rtol {r.tolerance.rtol:g}, atol {r.tolerance.atol:g}" if r.tolerance else ""
        rows.append(f"<tr><td>{html.escape(r.path)}</td><td class='{r.status}'>{r.status}</td>"
                    f"<td>{r.max_abs:.3g}</td><td>{r.max_rel:.3g}</td><td>{r.failing}</td>"
                    f"<td>{html.escape(r.where)}</td><td>{html.escape(r.reason or tol)}</td></tr>")
    figures = []
    with open_hdf5(c.golden)[0] as fg, open_hdf5(c.new)[0] as fn:
        time = fg["time"][()] if "time" in fg else None
        for r in c.failures:
            if len(figures) >= max_figures:
                break
            if r.status != "fail" or r.path not in fg or r.path not in fn:
                continue
            g, n = fg[r.path], fn[r.path]
            if g.dtype.kind not in "fiu" or g.shape != n.shape or g.ndim == 0:
                continue
            per_row = g.ndim >= 1 and g.dims[0].label == "time"
            per_event = g.ndim >= 1 and g.dims[0].label == "contact" and \
                "contacts/time" in fg and len(fg["contacts/time"]) == len(g)
            x = time if per_row else fg["contacts/time"][()] if per_event else None
            fig = comparison_figure(g[()], n[()], r.path, r.tolerance or Tolerance(0, 0), x,
                                    names=_column_names(fg, g), units=_units(g),
                                    per_event=per_event)
            figures.append(f"<figure id='{html.escape(r.path)}'><figcaption>"
                           f"{html.escape(r.path)}: {html.escape(r.reason)}"
                           f"{', worst at ' + html.escape(r.where) if r.where else ''}"
                           f"</figcaption>{_svg(fig)}</figure>")
    replay = _replay(c)
    verdict = "OK" if c.ok else "DIFFERENT"
    attrs = "".join(f"<li>{html.escape(a)}</li>" for a in c.attributes)
    doc = f"""{_head(verdict, c.golden, c.new)}
{len(c.results)} datasets compared, {len(c.failures)} failing, {len(c.attributes)} attributes
differ.</p>
{f"<h2>Attributes that differ</h2><ul>{attrs}</ul>" if attrs else ""}
<h2>Datasets</h2>
<table><tr><th>dataset</th><th>status</th><th>max abs err</th><th>max rel err</th>
<th>failing</th><th>where</th><th>tolerance / reason</th></tr>
{"".join(rows)}</table>
{replay}
<h2>Failing datasets over time</h2>
{"".join(figures) or "<p>none</p>"}
</body></html>
"""
    with output_file(path, "--html", "report", marked, inputs) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(doc)
    return len(figures)


def folder_report(fc, folder: str, inputs: tuple = ()) -> list[str]:
    """The reports of a folder compare (raisimcli.batch.compare_dirs.FolderComparison) in
    `folder` (made if missing): `<name>.html` for each pair of logs that differ (html_report,
    with the replay of both) and `index.html`, a table of every pair linking to its report.
    Returns the files written, the index last."""
    import os
    os.makedirs(folder, exist_ok=True)
    written, rows = [], []
    for p in sorted(fc.pairs, key=lambda p: (p.ok, p.name)):
        link = html.escape(p.name)
        if p.comparison is not None and not p.ok:
            name = f"{p.name}.html"
            html_report(p.comparison, os.path.join(folder, name), inputs=inputs)
            written.append(os.path.join(folder, name))
            link = f"<a href='{html.escape(name)}'>{html.escape(p.name)}</a>"
        failing = len(p.comparison.failures) if p.comparison is not None else "-"
        first = p.comparison.first_failing_time if p.comparison is not None else None
        rows.append(f"<tr><td>{link}</td><td class='{p.status}'>{p.status}</td>"
                    f"<td>{failing}</td><td>{'' if first is None else f'{first:.6g} s'}</td>"
                    f"<td>{html.escape(p.reason)}</td></tr>")
    verdict = "OK" if fc.ok else "DIFFERENT"
    doc = f"""{_head(verdict, fc.golden, fc.new)}
{len(fc.pairs)} logs compared, {len(fc.failures)} failing; each failing pair's report (its
datasets, figures and the replay of both runs) is linked.</p>
<table><tr><th>log</th><th>status</th><th>failing datasets</th><th>first failing time</th>
<th>reason</th></tr>
{"".join(rows)}</table>
</body></html>
"""
    index = os.path.join(folder, "index.html")
    with output_file(index, "--html", "report", marked, inputs) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(doc)
    return written + [index]
