"""The docs keep up with the code (sqlite-utils' habit): every command has help and is in the
README and docs/cli.md; the README's two set-up commands exist and .ci/run runs the test one."""

import os
import re

import pytest
from click.testing import CliRunner

from conftest import ROOT
from raisimcli.cli.main import cli

COMMANDS = sorted(cli.commands)


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def test_commands():
    assert COMMANDS == ["compare", "export", "inspect", "run"]


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help_and_docs(name):
    r = CliRunner().invoke(cli, [name, "--help"])
    assert r.exit_code == 0 and len(r.output) > 200
    assert f"raisimcli {name}" in read("README.md")
    assert f"## `raisimcli {name}" in read("docs", "cli.md")


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_is_documented(name):
    doc = read("docs", "cli.md")
    section = doc.split(f"## `raisimcli {name}", 1)[1].split("\n## ", 1)[0]
    for param in cli.commands[name].params:
        opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
        if opts and "--help" not in opts:
            assert any(o in section for o in opts), f"{name}: {opts} missing from docs/cli.md"


def test_readme_setup_commands_and_ci():
    readme = read("README.md")
    for marker in ("<!-- main-command -->", "<!-- test-command -->"):
        assert marker in readme
    test_cmd = readme.split("<!-- test-command -->", 1)[1].split("```", 2)[1].strip()
    assert "pytest" in test_cmd and "pip install" in test_cmd
    ci = read(".ci", "run")
    assert "test-command" in ci and "rm -rf .venv" in ci
    main_cmd = readme.split("<!-- main-command -->", 1)[1].split("```", 2)[1].strip()
    script = re.search(r"raisimcli run (\S+)", main_cmd).group(1)
    assert os.path.isfile(os.path.join(ROOT, script))
