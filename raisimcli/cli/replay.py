"""`raisimcli replay LOG.h5 -o replay.html` and `raisimcli view LOG.h5`: a log played back in a
browser (raisimcli.replay; docs/replay.md)."""

from __future__ import annotations

import click

_FPS_HELP = "The most frames a second of simulated time (the page's frame rate is the display's)."


def _warn(warnings) -> None:
    for w in warnings:
        click.echo(f"warning: {w}", err=True)


@click.command("replay")
@click.argument("log", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The HTML file to write (one self-contained page).")
@click.option("--fps", type=click.FloatRange(min=1, max=1000), default=60, show_default=True,
              help=_FPS_HELP)
@click.option("-q", "--quiet", is_flag=True, help="No message but warnings and errors.")
def replay_command(log, output, fps, quiet):
    """Write a replay of LOG: one HTML file that plays the run back in any browser, offline,
    with every robot's visual shapes (or collision shapes, or the box of a link's inertia), the
    ground, static boxes and contact forces, and the torque by source of a chosen joint.

    Exit codes: 0 written; 2 an unreadable log, a log without robots or URDF text, or an output
    path that cannot be written."""
    from raisimcli.cli.main import report_errors, stdout
    from raisimcli.replay import write_html

    @report_errors
    def go():
        r = write_html(log, output, fps, option="-o")
        _warn(r.warnings)
        if not quiet:
            stdout.print(f"wrote {output} ({r.size / 1e6:.1f} MB, {r.frames} frames"
                         f"{f', {len(r.meshes)} meshes' if r.meshes else ''})", markup=False)

    go()


@click.command("view")
@click.argument("log", type=click.Path(dir_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to serve on (another than the loopback one lets other machines "
                   "see the log).")
@click.option("--port", type=click.IntRange(0, 65535), default=0,
              help="The port (default: a free one).")
@click.option("--fps", type=click.FloatRange(min=1, max=1000), default=60, show_default=True,
              help=_FPS_HELP)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
def view_command(log, host, port, fps, open_browser):
    """Serve the replay of LOG on a local web server until Ctrl-C, and print its address.

    Exit codes: 0 stopped with Ctrl-C; 2 an unreadable log or an address that cannot be used."""
    from raisimcli.cli.main import report_errors
    from raisimcli.errors import UsageError
    from raisimcli.replay import html_of
    from raisimcli.replay.serve import serve

    @report_errors
    def go():
        page, scene = html_of(log, fps)
        _warn(scene.warnings)
        try:
            serve(page.encode(), host, port, open_browser)
        except OSError as e:
            raise UsageError(f"--host {host} --port {port}: cannot serve there "
                             f"({e.strerror or e})") from None

    go()
