"""Builds gpupool's C++ parts with CMake for pip (see pyproject.toml for how to install).

setuptools has no CMake support and scikit-build-core is not packaged by Debian 12, so build_ext
here configures the project with -DGPUPOOL_BUILD_PYTHON=ON, builds the extension module
(target gpupool_python) and a self-contained `gpupool` command (target gpupool_cli_bundled), and
places them: the module into the package, the command into the wheel's bin/ (data files).
"""
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
BUILD_DIR = pathlib.Path(os.environ.get("GPUPOOL_CMAKE_BUILD_DIR", ROOT / "build" / "pip"))
CLI = BUILD_DIR / "bindings" / "python" / "bin" / "gpupool"
HAVE_CLI = (ROOT / "cli" / "main.cpp").exists()  # the command, once cli/ has its main


class CMakeBuild(build_ext):
    def run(self):
        if shutil.which("cmake") is None:
            raise RuntimeError("cmake is needed to build gpupool: run scripts/setup.sh (or apt-get install cmake)")
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        configure = ["cmake", "-S", str(ROOT), "-B", str(BUILD_DIR), "-DGPUPOOL_BUILD_PYTHON=ON",
                     f"-DPython_EXECUTABLE={sys.executable}"]
        if not (BUILD_DIR / "CMakeCache.txt").exists():  # a tree of one's own keeps its settings
            configure += [*generator, "-DCMAKE_BUILD_TYPE=Release", "-DGPUPOOL_BUILD_TESTS=OFF", "-DGPUPOOL_WERROR=OFF"]
        configure += shlex.split(os.environ.get("GPUPOOL_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        targets = ["gpupool_python"] + (["gpupool_cli_bundled"] if HAVE_CLI else [])
        jobs = os.environ.get("GPUPOOL_JOBS", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(BUILD_DIR), "-j", jobs, "--target", *targets], check=True)
        built = next((BUILD_DIR / "bindings" / "python" / "gpupool").glob("_gpupool*.so"))
        for ext in self.extensions:
            dest = pathlib.Path(self.get_ext_fullpath(ext.name))
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, dest)


setup(
    ext_modules=[Extension("gpupool._gpupool", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # The command lands in <prefix>/bin with its executable bit (pip keeps it from the wheel).
    data_files=[("bin", [os.path.relpath(CLI, ROOT)])] if HAVE_CLI else [],
    zip_safe=False,
)
