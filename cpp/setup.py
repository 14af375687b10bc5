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


# Compile the translation units in parallel (NPY_NUM_BUILD_JOBS overrides the job count).
ParallelCompile('NPY_NUM_BUILD_JOBS', default=2).install()

sources = sorted(os.path.relpath(p, HERE) for p in glob(str(HERE / 'src' / '*.cpp')))
ext = Pybind11Extension(
    'hri_core._hri_core',
    sources,
    include_dirs=[str(HERE / 'include')] + eigen_include_dirs(),
    cxx_std=17,
    extra_compile_args=['-O3', '-march=x86-64-v2', '-DNDEBUG'],
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
