"""`raisimcli plot LOG.h5 -o FIG`: a figure of a log (matplotlib, the extra `[plot]`)."""

from __future__ import annotations

import os

import click

FORMATS = (".png", ".svg", ".pdf")


@click.command("plot")
@click.argument("log", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The figure file; its suffix gives the format: .png, .svg or .pdf.")
@click.option("--kind", type=click.Choice(["torque", "state", "energy", "contacts", "wrench"]),
              default="torque", show_default=True,
              help="torque: by source per joint; state: q and u with limits; energy; contacts: "
                   "count, normal force per body, penetration; wrench: inverse dynamics.")
@click.option("--robot", default=None, help="The robot (default: the log's first).")
@click.option("--joint", "joints", multiple=True, metavar="NAME",
              help="A joint to plot (repeatable; default: those with the largest torque).")
@click.option("--from", "t_from", type=float, default=None, help="Start of the window (s).")
@click.option("--to", "t_to", type=float, default=None, help="End of the window (s).")
@click.option("-q", "--quiet", is_flag=True, help="No message.")
def plot_command(log, output, kind, robot, joints, t_from, t_to, quiet):
    """Draw a figure of LOG: the joint torque by source, the state against its limits, energies,
    contacts or joint wrenches (needs matplotlib: pip install 'raisimcli[plot]').

    Exit codes: 0 written; 2 unreadable log, unknown robot or joint, or no matplotlib."""
    from raisimcli.cli.main import report_errors, stdout
    from raisimcli.writing import MARK, check_output, marked, output_file
    from raisimcli.errors import UsageError

    @report_errors
    def go():
        suffix = os.path.splitext(output)[1].lower()
        if suffix not in FORMATS:
            raise UsageError(f"-o {output}: the suffix must be one of {', '.join(FORMATS)}")
        check_output(output, "-o", "figure", marked, inputs=(log,))
        from raisimcli.log import open_log
        from raisimcli.log.reader import reading
        from raisimcli.plot import figure
        with open_log(log, check=True) as lg, reading(log):
            fig = figure(lg, kind, robot=robot, joints=list(joints) or None, t_from=t_from,
                         t_to=t_to)
            status = lg.status
        if status != "complete":
            click.echo(f"warning: {log}: the log's run did not complete (status {status}): "
                       "the figure ends where it stopped", err=True)
        key = "Software" if suffix == ".png" else "Creator"
        with output_file(output, "-o", "figure", marked, inputs=(log,)) as tmp:
            fig.savefig(tmp, dpi=120, format=suffix[1:], metadata={key: MARK})
        if not quiet:
            stdout.print(f"wrote {output}", markup=False)

    go()
