from glob import glob

from setuptools import find_packages, setup

package_name = 'hri_console'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={package_name: ['web/*']},
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml', 'parameters.yaml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.yaml')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
    ],
    install_requires=['setuptools', 'websockets'],
    zip_safe=True,
    maintainer='hri_teleop team',
    maintainer_email='team@hri-teleop.dev',
    description='Browser operator console and live Foxglove bridge.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'console_node = hri_console.nodes:console_node',
            'foxglove_node = hri_console.nodes:foxglove_node',
        ],
        'hri.commands': [
            'console = hri_console.cli:main',
            'foxglove = hri_console.cli:foxglove_main',
        ],
    },
)
