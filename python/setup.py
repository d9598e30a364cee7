# SPDX-License-Identifier: Apache-2.0
"""Builds the gpufl package: the pure-Python files, and the extension
gpufl._gpufl, which CMake builds from the repository around this directory
(target gpufl_python in python/CMakeLists.txt, linked with a static libgpufl)
so that pip and a CMake build make the same module.

The extension uses only Python 3.11's limited API: the wheel is tagged
cp311-abi3 and serves every CPython from 3.11 on.

A build that lacks a piece (the wheel package, CMake, a C compiler, make)
stops with one line naming it and how to get it, before anything runs;
setuptools itself is checked by the build backend, _build_backend.py.
"""
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Command, Extension, setup
from setuptools.command.build_ext import build_ext

from _build_backend import missing_package

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def wheel_commands():
    """bdist_wheel, which pip runs (also for the metadata, through dist_info),
    comes from the wheel package until setuptools 70.1. Without it setuptools
    says only "invalid command 'bdist_wheel'"; this stand-in names the
    package instead, and only when a command actually needs it."""
    if (importlib.util.find_spec("wheel") or
            importlib.util.find_spec("setuptools.command.bdist_wheel")):
        return {}

    class MissingWheel(Command):
        def initialize_options(self):
            sys.exit(missing_package("wheel", "python3-wheel"))

    return {"bdist_wheel": MissingWheel}


def missing_tools():
    """What CMake needs that this machine lacks, as "CMake (apt-get install
    cmake)" phrases; checked first, since CMake's own messages about them
    are long and far from the end of pip's output."""
    missing = []
    if not shutil.which("cmake"):
        missing.append("CMake (apt-get install cmake)")
    cc = os.environ.get("CC", "").strip()
    if cc:  # CMake takes the compiler from CC when it is set, flags and all
        if not shutil.which(shlex.split(cc)[0]):
            missing.append("a C compiler (CC=%r is not found)" % cc)
    elif not any(shutil.which(c) for c in ("cc", "gcc", "clang")):
        missing.append("a C compiler (apt-get install gcc)")
    generator = os.environ.get("CMAKE_GENERATOR", "Unix Makefiles")
    if generator == "Unix Makefiles" and not shutil.which("make"):
        missing.append("make (apt-get install make)")
    elif generator.startswith("Ninja") and not shutil.which("ninja"):
        missing.append("ninja (apt-get install ninja-build)")
    return missing


def library_version():
    """The version in gpufl.h, the one source of it."""
    header = os.path.join(REPO, "include", "gpufl", "gpufl.h")
    try:
        with open(header, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        sys.exit("gpufl: the Python package builds from a gpufl source tree, but %s "
                 "cannot be read (%s)" % (header, e.strerror))
    parts = [re.search(r"#define GPUFL_VERSION_%s (\d+)" % p, text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class CMakeBuild(build_ext):
    """Runs CMake on the repository instead of compiling the sources itself."""

    def build_extension(self, ext):
        missing = missing_tools()
        if missing:
            listed = ", ".join(missing[:-1]) + " and " + missing[-1] if len(missing) > 1 else \
                missing[0]
            sys.exit("gpufl: building the extension needs %s; scripts/deps.sh installs them all"
                     % listed)
        cmake = shutil.which("cmake")
        build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
        config = "Debug" if self.debug else "RelWithDebInfo"
        configure = [cmake, "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=" + config,
                     "-DGPUFL_BUILD_PYTHON=ON", "-DGPUFL_BUILD_TESTS=OFF",
                     "-DGPUFL_BUILD_BENCH=OFF", "-DGPUFL_BUILD_EXAMPLES=OFF",
                     "-DPython3_EXECUTABLE=" + sys.executable]
        jobs = str(self.parallel or os.cpu_count() or 1)
        build = [cmake, "--build", build_dir, "--target", "gpufl_python", "-j", jobs]
        for step, command in (("configure", configure), ("build", build)):
            self.announce(" ".join(command), level=2)
            status = subprocess.run(command).returncode
            if status:  # CMake has said why; a traceback would bury that
                sys.exit("gpufl: CMake's %s step failed (exit status %d); its output is above"
                         % (step, status))
        built = os.path.join(build_dir, "python", "gpufl", "_gpufl.abi3.so")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


setup(
    version=library_version(),
    ext_modules=[Extension("gpufl._gpufl", sources=[], py_limited_api=True)],
    cmdclass={"build_ext": CMakeBuild, **wheel_commands()},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
