from glob import glob

from setuptools import find_packages, setup

package_name = 'hri_runtime'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.yaml')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='hri_teleop team',
    maintainer_email='team@hri-teleop.dev',
    description='Node runtime (rclpy / Zenoh / in-process), config tree, launcher, recorder and the hri CLI.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'hri = hri_runtime.cli:main',
        ],
        'hri.commands': [
            'launch = hri_runtime.launch:main',
            'run = hri_runtime.launch:run_main',
            'topic = hri_runtime.topic_cli:topic_main',
            'node = hri_runtime.topic_cli:node_main',
            'param = hri_runtime.topic_cli:param_main',
            'record = hri_runtime.recording:record_main',
            'play = hri_runtime.recording:play_main',
        ],
    },
)
