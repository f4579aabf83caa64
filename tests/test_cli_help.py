"""What ``kafkaseg <command> --help`` and a mistyped option tell an operator."""

from __future__ import annotations

import argparse

import pytest

from kafkaseg.cli.main import build_parser, main

COMMANDS = build_parser()._subparsers._group_actions[0].choices


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_argument_of_a_command_has_help(command):
    """--help lists no bare flag or argument: each says what it does (suppressed ones are not listed at all)."""
    bare = [action.option_strings or action.dest for action in COMMANDS[command]._actions
            if action.help != argparse.SUPPRESS and not (action.help or "").strip()]
    assert bare == [], f"kafkaseg {command} --help lists these without a word: {bare}"


@pytest.mark.parametrize("command, argv, unrecognized", [
    ("verify", ["verify", "--shalow", "/data"], "--shalow"),
    ("describe", ["describe", "/data", "--topc", "orders"], "--topc orders"),
    ("dump", ["dump", "--files", "x.log", "--deep-iterations"], "--deep-iterations"),
    ("offsets", ["offsets", "--data-dir", "/data", "--topics", "orders"], "--topics orders"),
])
def test_a_mistyped_option_is_reported_by_its_command(command, argv, unrecognized, capsys):
    """argparse reports unrecognized arguments with the top-level parser (``usage: kafkaseg [-h] [--version]
    {dump,...}``, ``kafkaseg: error: ...``), which does not show the options the command takes: the command's
    own usage and name are what the operator needs."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: kafkaseg {command} "), err
    assert f"kafkaseg {command}: error: unrecognized arguments: {unrecognized}\n" in err, err


@pytest.mark.parametrize("command", ["verify", "describe", "offsets", "locate"])
def test_the_commands_scripts_check_say_their_exit_statuses(command, capsys):
    """A cron job or an incident script branches on these: --help says what each status means."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 " in text and " 1 " in text and " 2 " in text, text


def test_python_dash_m_kafkaseg_runs_the_cli(tmp_path):
    """``python -m kafkaseg`` is the console script (for a venv whose bin/ is not on PATH, or a checkout): the same
    usage, commands and exit statuses as ``kafkaseg``."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "kafkaseg", "verify", str(tmp_path / "nope")],
                          capture_output=True, text=True, env=env)
    assert done.returncode == main(["verify", str(tmp_path / "nope")]) != 0, done
    assert done.stderr.startswith("kafkaseg verify: "), done.stderr
    done = subprocess.run([sys.executable, "-m", "kafkaseg", "--help"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.startswith("usage: kafkaseg "), done
