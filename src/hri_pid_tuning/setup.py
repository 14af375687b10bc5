from glob import glob

from setuptools import find_packages, setup

package_name = 'hri_pid_tuning'

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
    description='PID tuning service: recorder, playback, metrics, relay auto-tuning, heuristics, reports.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'pid_tuning_node = hri_pid_tuning.nodes:pid_tuning_node',
        ],
        'hri.commands': [
            'tune = hri_pid_tuning.cli:main',
            'pid = hri_pid_tuning.cli:main',
        ],
    },
)
