# SPDX-License-Identifier: Apache-2.0
"""`python -m gpufl` and gpufl.cli: the gpufl command-line tool run from
Python, which must be the C tool itself (the same output and exit codes as the
`gpufl` binary ctest names in GPUFL_CLI), on the fixture sessions of
tests/fixtures/sessions, a log root."""
import os
import subprocess
import sys

import pytest

from gpufl import cli

SESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "sessions")
# The gpufl binary, set by ctest; read now, before conftest's clean_state
# drops every GPUFL_* variable.
BINARY = os.environ.get("GPUFL_CLI")


def run(command, *args):
    """command (a list) with args; stdout, stderr and the exit code."""
    done = subprocess.run([*command, *args], capture_output=True,
                          env=dict(os.environ, NO_COLOR="1"))
    return done.stdout.decode("utf-8"), done.stderr.decode("utf-8"), done.returncode


def python_m(*args):
    return run([sys.executable, "-m", "gpufl"], *args)


def binary(*args):
    if not BINARY:
        pytest.skip("GPUFL_CLI (the gpufl binary) is not set: run through ctest")
    return run([BINARY], *args)


@pytest.mark.parametrize("args", [
    ["report", SESSIONS],
    ["report", "--format", "json", SESSIONS, "trace"],
    ["insights", "--session", "stacks", SESSIONS],
    ["sessions", SESSIONS],
    ["export", "--format", "chrome", "--output", "-", SESSIONS, "trace"],
])
def test_python_m_is_the_binary(args):
    out, err, code = python_m(*args)
    assert (out, err, code) == binary(*args)
    assert code == 0 and out and not err


def test_report_of_a_log_root_is_its_latest_session():
    out, _, code = python_m("report", SESSIONS)
    assert code == 0
    assert out.startswith("gpufl report: scoped_demo\n")
    assert out == binary("report", os.path.join(SESSIONS, "scoped"))[0]


@pytest.mark.parametrize("args, line", [
    (["report", "--bogus"], "gpufl: unknown option '--bogus'\nsee gpufl report --help\n"),
    (["export", SESSIONS], "gpufl: --format perfetto, chrome or ctf is needed\n"
                           "see gpufl export --help\n"),
    (["bogus"], "gpufl: unknown command 'bogus'\nsee gpufl --help\n"),
    ([], "gpufl: no command given\nsee gpufl --help\n"),
])
def test_usage_error(args, line):
    assert python_m(*args) == ("", line, 2)


def test_runtime_error():
    out, err, code = python_m("report", os.path.join(SESSIONS, "nowhere"))
    assert (out, code) == ("", 1)
    assert err == "gpufl: no such session or log root: '%s'\n" % os.path.join(SESSIONS, "nowhere")


def test_help():
    out, err, code = python_m("--help")
    assert code == 0 and not err
    assert out.startswith("usage: gpufl <command>")
    for command in ("report", "insights", "export", "sessions", "info"):
        assert "\n  %s " % command in out
        sub, _, sub_code = python_m(command, "--help")
        assert sub_code == 0 and sub.startswith("usage: gpufl " + command)


def test_info():
    out, _, code = python_m("info")
    assert code == 0
    assert "\nEngines\n" in out and "  Monitor: " in out


def test_run_returns_the_code_and_keeps_the_order_of_output(tmp_path):
    # In one process: what Python printed before comes first, and run()
    # returns the code instead of exiting, also when called again.
    script = (
        "import sys\n"
        "from gpufl import cli\n"
        "print('before', flush=False)\n"
        "sys.stderr.write('err before\\n')\n"
        "first = cli.run(['--version'])\n"
        "second = cli.run(['report', %r])\n"
        "print('after', first, second)\n" % str(tmp_path))
    out, err, code = run([sys.executable, "-c", script])
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "before" and lines[1].startswith("gpufl ") and lines[2] == "after 0 1"
    assert err.splitlines()[0] == "err before"
    assert "is neither a session directory" in err


def test_run_takes_paths(capfd):
    assert cli.run(["sessions", SESSIONS.encode()]) == 0
    assert "scoped_demo" in capfd.readouterr().out
    with pytest.raises(TypeError):
        cli.run(["sessions", 3])
