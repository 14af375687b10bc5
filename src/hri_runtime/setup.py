import os
from glob import glob
from pathlib import Path

import numpy
from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import find_packages, setup

package_name = 'hri_runtime'
HERE = Path(__file__).resolve().parent
WS = HERE.parent.parent   # the workspace (config/, launch/)

# Its translation units compile in parallel (NPY_NUM_BUILD_JOBS overrides the job count, as in cpp/).
ParallelCompile('NPY_NUM_BUILD_JOBS', default=2).install()

# The C++ extension hri_runtime._cdr: the CDR codec (src/cdr_codec.cpp; contract in its header)
# and the Zenoh backend's per-message path (src/zenoh_hot_path.cpp). Built by `pip install -e`,
# `colcon build` and the Dockerfile alike; absolute paths: `colcon build --symlink-install` runs
# this file from the build directory.
# HRI_SANITIZE=address,undefined: the sanitizer build of `make asan` (built into build/asan/, never
# into the .venv): asserts on, every report fatal.
SANITIZE = os.environ.get('HRI_SANITIZE', '').strip()
cdr_ext = Pybind11Extension(
    f'{package_name}._cdr',
    sorted(str(p) for p in (HERE / 'src').glob('*.cpp')),
    include_dirs=[numpy.get_include()],   # numpy's public C API (arrays of the codec)
    cxx_std=17,
    extra_compile_args=(['-O1', '-g1', '-UNDEBUG', '-fno-omit-frame-pointer', f'-fsanitize={SANITIZE}',
                         '-fno-sanitize-recover=all'] if SANITIZE else ['-O3', '-DNDEBUG']),
    extra_link_args=[f'-fsanitize={SANITIZE}'] if SANITIZE else [],
)


def workspace_files(top):
    """data_files entries for the workspace's ``top`` tree (config, robot launch files):
    installed to share/hri_runtime/<top>/... so an installed workspace finds them without the
    sources (hri_runtime.config.tree.find_config_root, ``ros2 launch hri_runtime fr3.launch.yaml``)."""
    root = WS / top
    out = {}
    for f in sorted(root.rglob('*.yaml')) if root.is_dir() else []:
        rel = f.parent.relative_to(WS)
        # relative to this file (colcon requires relative data_files): ../../config/...
        out.setdefault(f'share/{package_name}/{rel}', []).append(os.path.relpath(f, HERE))
    return sorted(out.items())


def interface_files():
    """(hri_interfaces/msg|srv, [files]) of src/hri_interfaces, paths relative to this file."""
    out = []
    for kind in ('msg', 'srv'):
        files = sorted((WS / 'src' / 'hri_interfaces' / kind).glob(f'*.{kind}'))
        if files:
            out.append((f'hri_interfaces/{kind}', [os.path.relpath(f, HERE) for f in files]))
    return out


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    ext_modules=[cdr_ext],
    cmdclass={'build_ext': build_ext},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml', 'parameters.yaml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.yaml')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
        *workspace_files('config'),
        *workspace_files('launch'),
        # the interface files, for a workspace built without ROS (hri_interfaces is ament_cmake and
        # then not built): hri_runtime.msgs falls back to share/hri_runtime/interfaces/<pkg>/
        *[(f'share/{package_name}/interfaces/{rel}', files)
          for rel, files in interface_files()],
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='hri_teleop team',
    maintainer_email='team@hri-teleop.dev',
    description='Node runtime (rclpy / Zenoh / in-process) with its C++ CDR codec, config tree, launcher, recorder and the hri CLI.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'hri = hri_runtime.cli.main:main',
        ],
        'hri.commands': [
            'launch = hri_runtime.cli.launch:main',
            'run = hri_runtime.cli.launch:run_main',
            'topic = hri_runtime.cli.topic:topic_main',
            'node = hri_runtime.cli.topic:node_main',
            'param = hri_runtime.cli.topic:param_main',
            'record = hri_runtime.bag.recording:record_main',
            'play = hri_runtime.bag.recording:play_main',
            'bag = hri_runtime.bag.recording:bag_main',
            'service = hri_runtime.cli.service:service_main',
            'interface = hri_runtime.cli.service:interface_main',
            'router = hri_runtime.impl.router:router_main',
        ],
    },
)
