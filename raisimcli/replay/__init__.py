"""A log played back in a browser: one self-contained HTML file (docs/replay.md).

    from raisimcli.replay import write_html
    report = write_html("out/quadruped_stand.h5", "replay.html")
    report.warnings  # what could not be drawn as the URDF says
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from raisimcli.replay.page import page
from raisimcli.replay.scene import FPS, Scene, read_scene
from raisimcli.writing import check_output, marked, write_bytes

__all__ = ["FPS", "Replay", "html_of", "write_html"]


@dataclass(frozen=True)
class Replay:
    """What write_html wrote: the file, its size in bytes, its frames, the mesh files it holds,
    and the warnings (shapes drawn otherwise than the URDF says, one line each)."""

    path: str
    size: int
    frames: int
    meshes: tuple[str, ...]
    warnings: tuple[str, ...]


def html_of(log_path: str, fps: float = FPS, *, ghost: str | None = None,
            start: float = 0.0) -> tuple[str, Scene]:
    """The replay page of the log at `log_path` and its scene (LogError for a log that cannot be
    replayed). `ghost`: a second log (the golden one of a comparison) whose robots the page shows
    translucent beside the first's; `start`: the time (s) the page opens at."""
    scene = read_scene(os.fspath(log_path), fps, ghost=None if ghost is None else
                       os.fspath(ghost), start=start)
    return page(scene.data), scene


def write_html(log_path: str, out_path: str, fps: float = FPS, *, option: str = "out_path") -> \
        Replay:
    """Write the replay of the log at `log_path` to `out_path`, a self-contained HTML file that
    a browser opens offline; at most `fps` frames a second of simulated time. The file appears
    whole or not at all (written beside, then renamed); an existing file at `out_path` is
    replaced only when it is a page of ours (UsageError otherwise, naming `option`)."""
    out_path, log_path = os.fspath(out_path), os.fspath(log_path)
    check_output(out_path, option, "replay page", marked, (log_path,))
    text, scene = html_of(log_path, fps)
    write_bytes(out_path, text.encode(), option, "replay page", marked, (log_path,))
    return Replay(path=os.fspath(out_path), size=os.path.getsize(out_path), frames=scene.frames,
                  meshes=tuple(scene.meshes), warnings=tuple(scene.warnings))
