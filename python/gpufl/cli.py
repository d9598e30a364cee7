# SPDX-License-Identifier: Apache-2.0
"""The gpufl command-line tool, from Python: `python -m gpufl ...` and the
`gpufl` command pip installs.

Both run the C tool itself (cmd/gpufl, compiled into the extension
gpufl._gpufl), not a copy of it: the same commands, options, output and exit
codes as the `gpufl` executable (docs/cli.md).

    from gpufl import cli
    code = cli.run(["report", "my_app.log"])
"""
import signal
import sys

from . import _gpufl


def run(args):
    """Runs the tool on args (a list of str or paths, without the program
    name) in this process and returns its exit code: 0 done, 1 runtime
    failure, 2 usage error. It writes to file descriptors 1 and 2 (what
    sys.stdout and sys.stderr held is flushed first), not to sys.stdout."""
    return _gpufl._cli_main(["gpufl", *args])


def main(args=None):
    """The program: runs the tool on args (default: sys.argv[1:]) and exits
    with its code."""
    # As the executable: Ctrl-C and a closed pipe (`| head`) end it at once.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(run(sys.argv[1:] if args is None else args))
