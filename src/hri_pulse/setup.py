from glob import glob

from setuptools import find_packages, setup

package_name = 'hri_pulse'

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
    install_requires=['setuptools', 'numpy', 'PyYAML', 'pyzmq'],
    zip_safe=True,
    maintainer='hri_teleop team',
    maintainer_email='team@hri-teleop.dev',
    description='VR (Unity UDP) and gamepad input, 3-cycle command pulses, link-health monitor.',
    license='Apache-2.0',
    extras_require={'test': ['pytest', 'hypothesis']},
    entry_points={
        'console_scripts': [
            'vr_interface_node = hri_pulse.nodes:vr_interface_node',
            'gamepad_node = hri_pulse.nodes:gamepad_node',
            'joy_evdev = hri_pulse.nodes:joy_evdev',
        ],
        'hri.commands': [
            'vr-emulate = hri_pulse.emulator:main',
        ],
    },
)
