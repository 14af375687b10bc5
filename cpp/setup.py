"""hri_core: C++17 core (Eigen + pybind11) as an ament_python package.

Builds the extension ``hri_core._hri_core`` from every ``src/*.cpp``; taken by
``pip install -e cpp`` and by ``colcon build`` alike.
"""
import os
import site
import sys
from glob import glob
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import find_packages, setup

package_name = 'hri_core'
HERE = Path(__file__).resolve().parent


def eigen_include_dirs():
    """Eigen headers: cmeel-eigen (PyPI) in any site-packages, else Debian's libeigen3-dev."""
    candidates = []
    roots = list(sys.path) + list(site.getsitepackages() if hasattr(site, 'getsitepackages') else [])
    for root in roots:
        candidates.append(os.path.join(root, 'cmeel.prefix', 'include', 'eigen3'))
    candidates += ['/usr/include/eigen3', '/usr/local/include/eigen3']
    for c in candidates:
        if os.path.isfile(os.path.join(c, 'Eigen', 'Core')):
            return [c]
    raise RuntimeError('Eigen not found: pip install cmeel-eigen or apt install libeigen3-dev')


def mujoco_lib():
    """(include dir, library dir, library file) of the mujoco wheel (libmujoco + C headers), or
    None: the real-time loop is then built without its MuJoCo robot (hri_core.rt.HAS_MUJOCO)."""
    import importlib.util

    spec = importlib.util.find_spec('mujoco')
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    libs = sorted(root.glob('libmujoco.so*'))
    if not (root / 'include' / 'mujoco' / 'mujoco.h').is_file() or not libs:
        return None
    return root / 'include', root, libs[-1].name


# Compile the translation units in parallel (NPY_NUM_BUILD_JOBS overrides the job count).
ParallelCompile('NPY_NUM_BUILD_JOBS', default=2).install()

# Absolute paths: `colcon build --symlink-install` runs this file from the build directory.
sources = sorted(str(Path(p).resolve()) for p in glob(str(HERE / 'src' / '*.cpp')))
# numpy's C headers: the fast paths read arrays through numpy's public C API (src/numpy_c_api.hpp)
import numpy  # noqa: E402

include_dirs = [str(HERE / 'include')] + eigen_include_dirs() + [numpy.get_include()]
compile_args = ['-O3', '-DNDEBUG', '-pthread']
# Portable by default (amd64 and arm64 alike); HRI_CORE_MARCH=x86-64-v2 (or native, armv8.2-a, ...)
# builds for that CPU level, e.g. for the benchmarks in docs/benchmarks.md.
MARCH = os.environ.get('HRI_CORE_MARCH', '').strip()
if MARCH:
    compile_args.append(f'-march={MARCH}')
link_args = ['-pthread']
# HRI_SANITIZE=address,undefined: the sanitizer build of `make asan` (built into build/asan/, never
# into the .venv): asserts on (Eigen's included), every report fatal.
SANITIZE = os.environ.get('HRI_SANITIZE', '').strip()
if SANITIZE:
    compile_args = ['-O1', '-g1', '-UNDEBUG', '-fno-omit-frame-pointer', f'-fsanitize={SANITIZE}',
                    '-fno-sanitize-recover=all', '-pthread']
    link_args += [f'-fsanitize={SANITIZE}']
MUJOCO = mujoco_lib()
if MUJOCO is not None:
    # link the wheel's libmujoco by its file name; rpath: the wheel found at build time, and
    # ../mujoco next to an installed hri_core (same site-packages)
    inc, libdir, libname = MUJOCO
    include_dirs.append(str(inc))
    compile_args.append('-DHRI_WITH_MUJOCO')
    link_args += [f'-L{libdir}', f'-l:{libname}', f'-Wl,-rpath,{libdir}', '-Wl,-rpath,$ORIGIN/../mujoco']
# what the extension reports as its build (hri_core._hri_core.BUILD_FLAGS, hri_runtime.provenance)
build_flags = ' '.join(['-std=c++17'] + compile_args)
ext = Pybind11Extension(
    'hri_core._hri_core',
    sources,
    include_dirs=include_dirs,
    cxx_std=17,
    extra_compile_args=compile_args,
    extra_link_args=link_args,
    define_macros=[('HRI_BUILD_FLAGS', '"' + build_flags + '"')],
)

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    ext_modules=[ext],
    cmdclass={'build_ext': build_ext},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools', 'numpy'],
    zip_safe=False,
    maintainer='hri_teleop team',
    maintainer_email='team@hri-teleop.dev',
    description='C++ core: SE(3) math, POE kinematics, safety checker (pybind11).',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
)
