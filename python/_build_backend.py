# SPDX-License-Identifier: Apache-2.0
"""The build backend pip runs for this directory (pyproject.toml): setuptools'
own, setuptools.build_meta, imported here so that a Python without setuptools
stops with one line naming it rather than a traceback. setup.py checks the
other pieces the build needs, with missing_package() for the Python ones.
"""
import sys


def missing_package(name, debian):
    """The message for a Python package the build needs and this Python lacks."""
    return ("gpufl: building the package needs the %r package, which %s lacks: pip install %s, "
            "or apt-get install %s for Debian's python3 (and virtual environments made with "
            "--system-site-packages)" % (name, sys.executable, name, debian))


try:
    from setuptools.build_meta import *  # noqa: F401,F403  (the PEP 517 hooks)
except ImportError:
    sys.exit(missing_package("setuptools", "python3-setuptools"))
