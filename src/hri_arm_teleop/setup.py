from glob import glob

from setuptools import find_packages, setup

package_name = 'hri_arm_teleop'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
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
    description='Clutch-based relative 6-DoF arm teleop, keyboard teleop, multi-rate planner/controller, IK.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'arm_teleop = hri_arm_teleop.nodes:arm_teleop',
            'keyboard_teleop = hri_arm_teleop.nodes:keyboard_teleop',
        ],
        'hri.commands': [
            'teleop-demo = hri_arm_teleop.demo:main',
            'arm-emulate = hri_arm_teleop.emulate:main',
            'teleop-keyboard = hri_arm_teleop.keyboard_demo:main',
        ],
    },
)
