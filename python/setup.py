"""Builds braid._braid through the project's CMake build (the same targets as the main build),
and, where the installing environment has torch, the PyTorch backend braid._braid_torch against
that torch; then puts the extensions and libbraid.so.<major> into the package (they find the
library next to themselves, $ORIGIN). Settings: BRAID_CMAKE_ARGS (extra arguments for cmake),
BRAID_BUILD_JOBS (parallel jobs, default 2), BRAID_TORCH=0 (no PyTorch backend).

pip builds in an isolated environment, which hides the packages of the environment it installs
into; the interpreter is the same one, so the build runs it without the isolation's PYTHONPATH
to find that environment's torch (as `pip install --no-build-isolation` would)."""

import functools
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


VERSION = "0.1.0"
# The PyTorch versions the backend is built and tested against (docs/pytorch.md).
TORCH_RANGE = ((1, 13), (2, 11))
ISOLATION_VARIABLES = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")


def environment_without_isolation():
    env = dict(os.environ)
    for name in ISOLATION_VARIABLES:
        env.pop(name, None)
    return env


@functools.lru_cache(maxsize=None)
def installing_torch():
    """The version of the torch the installing environment imports, or None."""
    if os.environ.get("BRAID_TORCH", "1") == "0":
        return None
    # (Away from the source folder, whose build metadata names the autoload entry point.)
    env = dict(environment_without_isolation(), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                           env=env, cwd=os.path.expanduser("~"), capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        print(f"braid: torch is not importable here ({last}); the PyTorch backend is not built "
              "(import braid.torch says how to add it)", flush=True)
        return None
    version = probe.stdout.strip().splitlines()[-1]
    major_minor = tuple(int(p) for p in version.split("+")[0].split(".")[:2])
    low, high = TORCH_RANGE
    if not low <= major_minor <= high:
        raise RuntimeError(
            f"braid: torch {version} is outside the versions the PyTorch backend supports "
            f"({low[0]}.{low[1]} to {high[0]}.{high[1]}); install one of those, or set "
            "BRAID_TORCH=0 to install Braid without its PyTorch backend")
    return version


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
        args = ["-DCMAKE_BUILD_TYPE=Release", "-DBRAID_TESTS=OFF", "-DBRAID_BENCH=OFF",
                "-DBRAID_CUDA=OFF", "-DBRAID_PYTHON=ON", "-DBRAID_PYTHON_WHEEL=ON",
                "-DPython3_EXECUTABLE=" + sys.executable]
        if shutil.which("ccache"):
            args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
        args += shlex.split(os.environ.get("BRAID_CMAKE_ARGS", ""))
        jobs = os.environ.get("BRAID_BUILD_JOBS", "2")
        torch_version = installing_torch()
        env = (dict(environment_without_isolation(), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
               if torch_version else None)
        args.append("-DBRAID_TORCH2_PYTHON=")  # the installing environment's torch alone
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir] + args, env=env)
        targets = ["_braid"] + (["braid_torch_extension"] if torch_version else [])
        try:
            subprocess.check_call(["cmake", "--build", build_dir, "--target", *targets,
                                   "-j", jobs], env=env)
        except subprocess.CalledProcessError as e:
            raise RuntimeError(
                "building " + " and ".join(targets) + " failed; braid._braid needs the Python "
                "headers (python3-dev) and pybind11's CMake files (pybind11-dev), the PyTorch "
                "backend torch's C++ headers: see the cmake output above") from e
        built = glob.glob(os.path.join(build_dir, "python", "braid", "_braid*.so"))
        libraries = glob.glob(os.path.join(build_dir, "lib", "libbraid.so.*"))
        if not built or not libraries:
            raise RuntimeError("the CMake build did not produce braid._braid and libbraid.so")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(built[0], target)
        # The extension's DT_NEEDED names the soname (libbraid.so.<major>): copy the real file
        # under that name.
        soname = min(libraries, key=len)
        shutil.copy2(os.path.realpath(soname),
                     os.path.join(os.path.dirname(target), os.path.basename(soname)))
        if torch_version:
            backend = glob.glob(os.path.join(build_dir, "python", "braid", "_braid_torch*.so"))
            if not backend:
                raise RuntimeError(f"the CMake build did not produce braid._braid_torch for "
                                   f"torch {torch_version}: see the cmake output above")
            shutil.copy2(backend[0], os.path.join(os.path.dirname(target),
                                                  os.path.basename(backend[0])))


def version():
    """0.1.0, and for a build with the PyTorch backend the torch it is for, as a local version
    (0.1.0+torch2.11): a wheel's name says which torch it loads with."""
    torch_version = installing_torch()
    if not torch_version:
        return VERSION
    major, minor = torch_version.split("+")[0].split(".")[:2]
    return f"{VERSION}+torch{major}.{minor}"


setup(version=version(), ext_modules=[Extension("braid._braid", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
