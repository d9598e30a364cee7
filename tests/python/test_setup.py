# SPDX-License-Identifier: Apache-2.0
"""python/setup.py and its build backend, when a piece the build needs is
missing: pip must fail with one line naming the piece and how to get it,
not with setuptools' "invalid command 'bdist_wheel'" or a traceback.

Each case runs `pip install --no-build-isolation --no-index ./python` from a
copy of the tree, as docs/python.md tells users to, in a virtual environment
that lacks the piece (wheel, setuptools) or with a PATH that lacks it (CMake,
a C compiler, make). The build fails before compiling anything, so each case
takes a few seconds.
"""
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def tree(tmp_path):
    """A copy of the parts of the tree that the build reads."""
    src = tmp_path / "src"
    src.mkdir()
    skip = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    for part in ("CMakeLists.txt", "cmake", "include", "lib", "cmd", "python"):
        path = os.path.join(REPO, part)
        if os.path.isdir(path):
            shutil.copytree(path, src / part, ignore=skip)
        else:
            shutil.copy(path, src / part)
    return src


def pip_install(python, tree, env=None):
    """pip's exit status and its output (stdout and stderr together)."""
    env = dict(os.environ if env is None else env, PIP_DISABLE_PIP_VERSION_CHECK="1")
    done = subprocess.run(
        [python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-cache-dir",
         "--target", str(tree.parent / "site"), "./python"],
        cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=240)
    return done.returncode, done.stdout


def venv(path):
    """A virtual environment without the system's packages: pip and
    setuptools from ensurepip, and no wheel (ensurepip never installs it)."""
    done = subprocess.run([sys.executable, "-m", "venv", str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    assert done.returncode == 0, done.stdout  # Debian: python3-venv (scripts/deps.sh)
    return str(path / "bin" / "python")


def has_module(python, name):
    return subprocess.run([python, "-c", "import " + name], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def can_build_wheels(python):
    """setuptools before 70.1 builds wheels with the wheel package; later
    ones have their own bdist_wheel."""
    return has_module(python, "setuptools") and (
        has_module(python, "wheel") or has_module(python, "setuptools.command.bdist_wheel"))


def test_without_wheel_pip_names_the_wheel_package(tree, tmp_path):
    python = venv(tmp_path / "venv")
    if not has_module(python, "setuptools"):
        pytest.skip("this Python's ensurepip installs no setuptools (3.12 and later)")
    if has_module(python, "setuptools.command.bdist_wheel"):
        pytest.skip("this setuptools has its own bdist_wheel: wheel is not needed")
    assert not has_module(python, "wheel")
    rc, out = pip_install(python, tree)
    assert rc != 0
    assert ("gpufl: building the package needs the 'wheel' package, which %s lacks: pip install "
            "wheel, or apt-get install python3-wheel" % python) in out, out
    assert "invalid command" not in out and "Traceback" not in out, out


def test_without_setuptools_pip_names_setuptools(tree, tmp_path):
    python = venv(tmp_path / "venv")
    subprocess.run([python, "-m", "pip", "uninstall", "-y", "-q", "setuptools"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert not has_module(python, "setuptools")
    rc, out = pip_install(python, tree)
    assert rc != 0
    assert ("gpufl: building the package needs the 'setuptools' package, which %s lacks: pip "
            "install setuptools, or apt-get install python3-setuptools" % python) in out, out
    assert "Traceback" not in out, out


@pytest.fixture
def builder():
    """This interpreter, when it can build wheels at all (Debian's python3 can,
    with python3-wheel): the tool checks come after that."""
    if not can_build_wheels(sys.executable):
        pytest.skip("%s cannot build wheels (no setuptools or wheel)" % sys.executable)
    return sys.executable


def path_with(tmp_path, *tools):
    """A PATH holding only the named tools of this machine."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        assert found, tool
        os.symlink(found, bin_dir / tool)
    return str(bin_dir)


def build_env(path, **extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CC", "CMAKE_GENERATOR", "MAKEFLAGS")}
    env.update(PATH=path, **extra)
    return env


def test_without_any_build_tool_pip_names_each(tree, tmp_path, builder):
    rc, out = pip_install(builder, tree, build_env(path_with(tmp_path)))
    assert rc != 0
    assert "gpufl: building the extension needs CMake (apt-get install cmake), a C compiler " \
           "(apt-get install gcc) and make (apt-get install make)" in out, out
    assert "Traceback" not in out, out


def test_without_a_c_compiler_pip_names_it(tree, tmp_path, builder):
    rc, out = pip_install(builder, tree, build_env(path_with(tmp_path, "cmake", "make")))
    assert rc != 0
    assert "gpufl: building the extension needs a C compiler (apt-get install gcc)" in out, out
    assert "CMAKE_C_COMPILER" not in out and "Traceback" not in out, out


def test_a_cc_that_does_not_exist_is_named(tree, tmp_path, builder):
    path = path_with(tmp_path, "cmake", "make", "cc")
    rc, out = pip_install(builder, tree, build_env(path, CC="/no/such/gcc -O2"))
    assert rc != 0
    assert "gpufl: building the extension needs a C compiler (CC='/no/such/gcc -O2' is not " \
           "found)" in out, out


def test_a_failing_cmake_step_is_one_line_not_a_traceback(tree, tmp_path, builder):
    # A tree CMake refuses (here, a broken CMakeLists.txt): CMake says why,
    # then setup.py says which step failed, without a Python traceback.
    with open(tree / "CMakeLists.txt", "a", encoding="utf-8") as f:
        f.write("\nmessage(FATAL_ERROR \"broken on purpose\")\n")
    rc, out = pip_install(builder, tree)
    assert rc != 0
    assert "broken on purpose" in out, out
    assert "gpufl: CMake's configure step failed (exit status 1); its output is above" in out, out
    assert "Traceback" not in out and "CalledProcessError" not in out, out

