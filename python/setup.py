"""Builds the gpufl package: the pure-Python files, and the extension
gpufl._gpufl, which CMake builds from the repository around this directory
(target gpufl_python in python/CMakeLists.txt, linked with a static libgpufl)
so that pip and a CMake build make the same module.

The extension uses only Python 3.11's limited API: the wheel is tagged
cp311-abi3 and serves every CPython from 3.11 on.
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


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
        cmake = shutil.which("cmake")
        if not cmake:
            sys.exit("gpufl: building the extension needs CMake (apt-get install cmake, "
                     "or run scripts/deps.sh)")
        build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
        config = "Debug" if self.debug else "RelWithDebInfo"
        configure = [cmake, "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=" + config,
                     "-DGPUFL_BUILD_PYTHON=ON", "-DGPUFL_BUILD_TESTS=OFF",
                     "-DGPUFL_BUILD_BENCH=OFF", "-DGPUFL_BUILD_EXAMPLES=OFF",
                     "-DPython3_EXECUTABLE=" + sys.executable]
        jobs = str(self.parallel or os.cpu_count() or 1)
        build = [cmake, "--build", build_dir, "--target", "gpufl_python", "-j", jobs]
        for command in (configure, build):
            self.announce(" ".join(command), level=2)
            subprocess.run(command, check=True)
        built = os.path.join(build_dir, "python", "gpufl", "_gpufl.abi3.so")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


setup(
    version=library_version(),
    ext_modules=[Extension("gpufl._gpufl", sources=[], py_limited_api=True)],
    cmdclass={"build_ext": CMakeBuild},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
