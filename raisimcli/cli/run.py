"""`raisimcli run SCENARIO`: simulate and write the HDF5 log."""

from __future__ import annotations

import json
import os
import sys

import click
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, \
    TimeRemainingColumn
from rich.table import Table

from raisimcli.cli.batch import scheduler_options
from raisimcli.cli.output import emit
from raisimcli.errors import ControllerError


@click.command("run")
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False),
                metavar="SCENARIO...")
@click.option("-o", "--output", "output", type=click.Path(), default=None,
              help="Log file (default: the scenario's log.path, or SCENARIO.h5 in the current "
                   "folder). With several scenarios, or a folder (an existing one, or a name "
                   "ending in /): the folder of their logs and index.csv, run on Dask.")
@click.option("--duration", type=float, default=None, help="Override world.duration (s).")
@click.option("--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE",
              help="Override a scenario key, e.g. --set world.dt=0.002 --set robot.0.pd.kp=50 "
                   "(the value is read as TOML; repeatable).")
@click.option("--strict", is_flag=True,
              help="Refuse a URDF that gives warnings (see `raisimcli inspect`).")
@click.option("--max-joints", type=click.IntRange(min=1), default=None,
              help="Refuse models with more moving joints (default 200).")
@click.option("-W", "--ignore-warning", "ignore", multiple=True, metavar="CODE",
              help="Do not report URDF warnings with this code (repeatable).")
@click.option("--no-clobber", is_flag=True,
              help="Refuse to run when the log file exists already (default: replace it).")
@click.option("-v", "--verbose", is_flag=True, help="Also list every file the run reads.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary.")
@scheduler_options
def run_command(scenarios, output, duration, overrides, strict, max_joints, ignore, no_clobber,
                verbose, as_json, quiet, jobs, scheduler):
    """Simulate SCENARIO (TOML) and write an HDF5 log; several scenarios (or -o FOLDER/) run as a
    batch on Dask, one log each (docs/sweep.md).

    Exit codes: 0 complete; 1 diverged, a controller raised or the log could not be written;
    2 bad input; 130 interrupted by SIGINT, SIGTERM or SIGHUP (the log is kept, with status
    `interrupted`). A run that does not complete never replaces a complete log: its log goes
    beside it (NAME.interrupted.h5, NAME.diverged.h5, NAME.error.h5)."""
    from raisimcli.cli.main import report_errors, stderr, stdout
    from raisimcli.errors import UsageError

    if len(scenarios) > 1 or (output is not None and (os.path.isdir(output)
                                                      or output.endswith(("/", os.sep)))):
        @report_errors(json_output=as_json)
        def batch():
            from raisimcli.cli.batch import run_batch, scenario_cases
            out_dir = output if output is not None else "."
            if output is not None and output.lower().endswith((".h5", ".hdf5")) and \
                    not os.path.isdir(output):
                raise UsageError(f"-o {output}: {len(scenarios)} scenarios write one log each "
                                 "into a folder; give a folder (a name without .h5, or one "
                                 "ending in /), or run one scenario to write that log")
            cases = scenario_cases(scenarios, overrides)
            if no_clobber:
                for name, *_ in cases:
                    if os.path.exists(os.path.join(out_dir, f"{name}.h5")):
                        raise UsageError(f"--no-clobber: the log {os.path.join(out_dir, name)}"
                                         ".h5 exists already")
            run_batch(cases, out_dir, jobs=jobs, scheduler=scheduler, resume=False,
                      duration=duration, strict=strict, ignore=ignore, as_json=as_json,
                      quiet=quiet)
        return batch()
    if jobs is not None or scheduler is not None:
        @report_errors(json_output=as_json)
        def refuse():
            raise UsageError("--jobs and --scheduler are for several scenarios or -o FOLDER/")
        return refuse()
    scenario = scenarios[0]
    from raisimcli.scenario import load_scenario, run  # heavy (Pinocchio, numba): load on use

    @report_errors(json_output=as_json)
    def go():
        scn = load_scenario(scenario, tuple(overrides), duration=duration, log_path=output,
                            strict=strict, ignore_warnings=ignore,
                            **({"max_joints": max_joints} if max_joints else {}))
        if no_clobber and os.path.exists(scn.log_path):
            raise UsageError(f"--no-clobber: the log {scn.log_path} exists already")
        from raisimcli.cli import entry
        entry.QUICK_EXIT = all(r.controller is None for r in scn.robots)  # (entry's docstring)
        if verbose and not as_json:
            for f in scn.inputs:
                stderr.print(f"reads: {escape(f)}")
        show = not quiet and not as_json
        progress = None
        if show:
            progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                TextColumn("{task.completed}/{task.total} steps"),
                                TextColumn("t = {task.fields[sim]:.3f} s"),
                                TextColumn("x{task.fields[rtf]:.2f} real time"),
                                TimeElapsedColumn(), TextColumn("elapsed,"),
                                TimeRemainingColumn(), TextColumn("left"), console=stderr,
                                transient=False)
            task = progress.add_task(os.path.basename(scenario), total=scn.steps, sim=0.0,
                                     rtf=0.0)
            progress.start()

            def tick(k, n, wall):
                progress.update(task, completed=k, sim=k * scn.dt,
                                rtf=(k * scn.dt / wall) if wall > 0 else 0.0)
        try:
            result = run(scn, progress=tick if show else None,
                         progress_every=max(1, min(500, scn.steps // 100 or 1)))
        except KeyboardInterrupt as e:
            if progress:
                progress.stop()
            name = getattr(e, "signal_name", "SIGINT")
            click.echo(f"interrupted by {name}: the log {getattr(e, 'log_path', scn.log_path)} "
                       f"holds every step up to the stop (status interrupted){_kept(e)}",
                       err=True)
            sys.exit(130)
        except ControllerError as e:
            if progress:
                progress.stop()
            click.echo(e.user_traceback(), err=True, nl=False)
            click.echo(f"error: {e}", err=True)
            click.echo(f"the log {getattr(e, 'log_path', scn.log_path)} is kept, with status "
                       f"error{_kept(e)}", err=True)
            sys.exit(1)
        except BaseException:
            if progress:
                progress.stop()
            raise
        if progress:
            progress.update(task, completed=result.steps, sim=result.sim_time,
                            rtf=result.sim_time / max(result.wall_time, 1e-9))
            progress.stop()
        summary = {
            "status": result.status, "message": result.message, "log": result.log_path,
            "steps": result.steps, "sim_time": result.sim_time, "wall_time": result.wall_time,
            "first_step_time": result.first_step_time,
            "steps_per_second": result.steps / max(result.wall_time, 1e-9),
            "real_time_factor": result.sim_time / max(result.wall_time, 1e-9),
            "final_energy": {k: {"kinetic": v[0], "potential": v[1]}
                             for k, v in result.final_energy.items()},
            "warnings": result.warnings, "kept": result.kept, "replaced": result.replaced,
        }
        if as_json:
            emit(json.dumps(summary, indent=2))
        elif not quiet:
            t = Table(title=f"run {result.status}", title_justify="left", show_header=False)
            t.add_row("log", escape(result.log_path))
            if result.kept:
                t.add_row("kept", f"{escape(result.kept)} (a complete log, not replaced)")
            if result.replaced:
                t.add_row("replaced", "the log that was at this path before")
            t.add_row("simulated", f"{result.sim_time:.6g} s in {result.steps} steps")
            wall = f"{result.wall_time:.3f} s"
            if result.first_step_time > max(1.0, 0.25 * result.wall_time):
                wall += (f" ({result.first_step_time:.1f} s of it the first step: numba compiling "
                         "the step's loops, cached for the next runs)")
            t.add_row("wall time", wall)
            t.add_row("steps per second", f"{summary['steps_per_second']:.0f}")
            t.add_row("real-time factor", f"{summary['real_time_factor']:.2f}")
            for name, (ke, pe) in result.final_energy.items():
                t.add_row(f"{escape(name)} energy",
                          f"kinetic {ke + 0.0:.6g} J, potential {pe + 0.0:.6g} J")
            stdout.print(t)
            for wmsg in result.warnings:
                stderr.print(f"[yellow]warning:[/] {escape(str(wmsg))}", markup=True,
                             highlight=False, soft_wrap=True)
        if result.status == "diverged":
            click.echo(f"error: {result.message}; the log {result.log_path} is kept, with "
                       f"status diverged{_kept(result)}", err=True)
            sys.exit(1)

    go()


def _kept(e) -> str:
    kept = getattr(e, "kept", None)
    return f"; the complete log {kept} was left as it was" if kept else ""
