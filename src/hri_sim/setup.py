import importlib.util
import os
import sys
from glob import glob

from setuptools import find_packages, setup

package_name = 'hri_sim'

# The arms' meshes for package://hri_sim/meshes/<robot>/... URIs in /robot_description
# (hri_sim.nodes.robot_state_node): copied at install time (colcon build) from the model wheels
# the simulation loads them from (franky-sim, robosuite; never imported, never committed here).
# Not for pip's editable install (the venv), where the URDF names the wheel's files (file://).
MESH_SOURCES = {'fr3': ('franky_sim', 'assets'), 'ur5e': ('robosuite', 'models/assets/robots/ur5e'),
                'iiwa14': ('robosuite', 'models/assets/robots/iiwa')}
MESH_SUFFIXES = ('.obj', '.stl', '.dae', '.STL', '.glb', '.mtl', '.png')


def mesh_data_files():
    if 'editable_wheel' in sys.argv:
        return []
    out = []
    for robot, (module, sub) in MESH_SOURCES.items():
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = os.path.join(list(spec.submodule_search_locations)[0], sub)
        for folder, _, files in os.walk(root):
            picked = [os.path.join(folder, f) for f in sorted(files) if f.endswith(MESH_SUFFIXES)]
            if picked:
                rel = os.path.relpath(folder, root)
                out.append((os.path.normpath(os.path.join('share', package_name, 'meshes', robot, rel)), picked))
    return out


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={package_name: ['mjcf/*.xml', 'mjcf/**/*']},   # MJCF: nodes run from install/ too
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml', 'parameters.yaml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.yaml')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
    ] + mesh_data_files(),
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='hri_teleop team',
    maintainer_email='team@hri-teleop.dev',
    description='MuJoCo simulation of the arms and the social robot.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'tino_sim = hri_sim.nodes:tino_sim',
            'joint_robot_node = hri_sim.nodes:joint_robot_node',
            'robot_state = hri_sim.nodes:robot_state',
        ],
        'hri.commands': [
            'sim = hri_sim.cli:main',
        ],
    },
)
