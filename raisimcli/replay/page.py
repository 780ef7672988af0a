"""The replay's HTML: one self-contained page that loads nothing from anywhere (its content
security policy forbids every request): three.js (vendored in `three/`, MIT licence) and the
viewer (`viewer.js`) are ES modules given by `data:` URLs in the page's import map, and the
scene is a JSON block (raisimcli/replay/scene.py)."""

from __future__ import annotations

import base64
import html
import json
from functools import cache
from importlib.resources import files

_HERE = files("raisimcli.replay")

# what the page may load: its own inline styles and scripts, modules from data: URLs, images
# drawn in the page; no connection, no frame, no font or image from elsewhere
POLICY = ("default-src 'none'; script-src 'unsafe-inline' data:; style-src 'unsafe-inline'; "
          "img-src data: blob:")

_STYLE = """
html, body { margin: 0; height: 100%; font: 13px system-ui, sans-serif; color: #222; }
body { display: flex; flex-direction: column; }
header { padding: 6px 10px; background: #2c3e50; color: #fff; display: flex; gap: 16px;
  align-items: baseline; }
header .file { opacity: 0.7; }
header .ghost { color: #9cc0ff; }
#view { flex: 1 1 auto; min-height: 200px; position: relative; overflow: hidden; }
#legend { position: absolute; right: 10px; top: 8px; background: rgba(255,255,255,0.85);
  padding: 3px 6px; border-radius: 3px; color: #c0392b; }
#bar { display: flex; gap: 8px; align-items: center; padding: 6px 10px; background: #f4f5f7;
  border-top: 1px solid #ccd; flex-wrap: wrap; }
#slider { flex: 1 1 300px; }
#clock { font-variant-numeric: tabular-nums; min-width: 150px; }
#panel { display: flex; flex-direction: column; height: 190px; border-top: 1px solid #ccd; }
#panel .choices { display: flex; gap: 10px; padding: 4px 10px; flex-wrap: wrap;
  align-items: center; }
#sources label { margin-right: 8px; white-space: nowrap; }
#plot { flex: 1 1 auto; width: 100%; min-height: 100px; cursor: crosshair; }
"""

_BODY = """
<header><strong>{title}</strong><span class="file">{file}</span>{ghost}<span>{status}</span>
</header>
<div id="view"><div id="legend" hidden></div></div>
<div id="bar">
  <button id="play" title="play / pause (space)">play</button>
  <button id="back" title="one frame back (left arrow)">&#9664;</button>
  <button id="forward" title="one frame on (right arrow)">&#9654;</button>
  <input id="slider" type="range" min="0" max="0" value="0" step="1" aria-label="time">
  <span id="clock"></span>
  <label>speed <select id="speed">
    <option value="0.1">0.1x</option><option value="0.25">0.25x</option>
    <option value="0.5">0.5x</option><option value="1" selected>1x</option>
    <option value="2">2x</option><option value="4">4x</option></select></label>
  <label><input id="follow" type="checkbox"> follow the base</label>
</div>
<div id="panel">
  <div class="choices">
    <label>robot <select id="robot"></select></label>
    <label>joint <select id="dof"></select></label>
    <span>torque by source:</span><span id="sources"></span>
  </div>
  <canvas id="plot"></canvas>
</div>
"""


def _module(text: str) -> str:
    return "data:text/javascript;base64," + base64.b64encode(text.encode()).decode()


@cache
def _import_map() -> str:
    three = _HERE / "three"
    core = (three / "three.core.min.js").read_text()
    module = (three / "three.module.min.js").read_text().replace('"./three.core.min.js"',
                                                                 '"three/core"')
    controls = (three / "OrbitControls.js").read_text()
    return json.dumps({"imports": {
        "three": _module(module), "three/core": _module(core),
        "three/addons/controls/OrbitControls.js": _module(controls)}})


def page(data: dict) -> str:
    """The HTML of the replay of `data` (scene.Scene.data)."""
    # (allow_nan=False: NaN is no JSON, and the page could not read its scene)
    scene = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    viewer = (_HERE / "viewer.js").read_text()
    ghost = data.get("ghost_file")
    body = _BODY.format(title=html.escape(data["title"]), file=html.escape(data["file"]),
                        ghost="" if ghost is None else
                        f"<span class=\"ghost\">golden: {html.escape(ghost)} (translucent "
                        "blue)</span>",
                        status="" if data["status"] == "complete" else
                        html.escape(f"run {data['status']}"))
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"generator\" content=\"raisimcli replay\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(data['title'])}: raisimcli replay</title>\n"
        f"<style>{_STYLE}</style>\n"
        f"<script type=\"importmap\">{_import_map()}</script>\n"
        "</head>\n<body>"
        f"{body}"
        f"<script type=\"application/json\" id=\"replay-data\">{scene}</script>\n"
        f"<script type=\"module\">\n{viewer}</script>\n"
        "</body>\n</html>\n")
