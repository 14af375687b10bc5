import importlib.util
import os
import sys
from glob import glob

from setuptools import find_packages, setup
try:
    from setuptools.command.install_data import install_data
except ImportError:   # older setuptools: distutils' (setuptools ships it as a shim)
    from distutils.command.install_data import install_data

package_name = 'hri_sim'

# The arms' meshes for package://hri_sim/meshes/<robot>/... URIs in /robot_description
# (hri_sim.nodes.robot_state_node): copied at install time (colcon build) from the model wheels
# the simulation loads them from (franky-sim, robosuite; never imported, never committed here),
# for every robot file with a sim.model (hri_sim.models reads the same keys).
# Not for pip's editable install (the venv): there the Foxglove bridge serves the same URIs from
# the wheels (fetchAsset, hri_sim.models.mesh_file_for_uri).
def mesh_sources():
    """robot -> (package, MJCF path in it): each robot file's sim.model (config/robots, next to
    src/); a robot without one (the social robot) has no meshes here."""
    import yaml

    here = os.path.dirname(os.path.abspath(__file__))
    robots = os.path.join(here, '..', '..', 'config', 'robots')
    out = {}
    for name in sorted(glob(os.path.join(robots, '*.yaml'))):
        with open(name, encoding='utf-8') as f:
            model = ((yaml.safe_load(f) or {}).get('sim') or {}).get('model') or {}
        if model.get('package') and model.get('mjcf'):
            out[os.path.basename(name)[:-len('.yaml')]] = (model['package'], model['mjcf'])
    return out


def _mjcf_mesh_files(root, xml_name):
    """The mesh files an MJCF names (compiler meshdir, else the folder, else meshes/: an MJCF whose
    meshdir is wrong, as hri_sim.models handles with sim.model.mesh_dir)."""
    import xml.etree.ElementTree as ET

    doc = ET.parse(os.path.join(root, xml_name)).getroot()
    meshdir = next((c.get('meshdir') for c in doc.iter('compiler') if c.get('meshdir')), '')
    out = set()
    for mesh in doc.iter('mesh'):
        name = mesh.get('file')
        if not name:
            continue
        for cand in (os.path.join(root, meshdir, name), os.path.join(root, name), os.path.join(root, 'meshes', name)):
            if os.path.isfile(cand):
                out.add(os.path.normpath(cand))
                break
    return sorted(out)


def mesh_data_files():
    if 'editable_wheel' in sys.argv:
        return []
    out = {}
    for robot, (module, mjcf) in mesh_sources().items():
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            continue
        sub, xml_name = os.path.split(mjcf)
        root = os.path.join(list(spec.submodule_search_locations)[0], sub)
        if not os.path.isfile(os.path.join(root, xml_name)):
            continue
        for f in _mjcf_mesh_files(root, xml_name):
            rel = os.path.relpath(os.path.dirname(f), root)
            out.setdefault(os.path.normpath(os.path.join('share', package_name, 'meshes', robot, rel)), []).append(f)
    return sorted(out.items())


class InstallDataWithMeshes(install_data):
    """install_data plus the meshes (setuptools refuses data_files outside the package folder)."""

    def run(self):
        super().run()
        for dest, files in mesh_data_files():
            folder = os.path.join(self.install_dir, dest)
            self.mkpath(folder)
            for f in files:
                out, _ = self.copy_file(f, folder)
                self.outfiles.append(out)


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
    ],
    cmdclass={'install_data': InstallDataWithMeshes},
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
