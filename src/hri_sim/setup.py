from glob import glob

from setuptools import find_packages, setup

package_name = 'hri_sim'

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
        ],
        'hri.commands': [
            'sim = hri_sim.cli:main',
        ],
    },
)
