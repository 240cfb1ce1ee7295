"""Builds braid._braid through the project's CMake build (the same targets as the main build),
then puts the extension and libbraid.so.<major> into the package; the extension finds the
library next to itself ($ORIGIN). Settings: BRAID_CMAKE_ARGS (extra arguments for cmake),
BRAID_BUILD_JOBS (parallel jobs, default 2)."""

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
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir] + args)
        try:
            subprocess.check_call(["cmake", "--build", build_dir, "--target", "_braid",
                                   "-j", jobs])
        except subprocess.CalledProcessError as e:
            raise RuntimeError(
                "building braid._braid failed; it needs the Python headers (python3-dev) and "
                "pybind11's CMake files (pybind11-dev): see the cmake output above") from e
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


setup(ext_modules=[Extension("braid._braid", sources=[])], cmdclass={"build_ext": CMakeBuild})
