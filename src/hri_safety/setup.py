from setuptools import find_packages, setup

package_name = 'hri_safety'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml', 'parameters.yaml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='hri_teleop team',
    maintainer_email='team@hri-teleop.dev',
    description='System-wide safe stop: the latched stop supervisor, its heartbeat and the '
                'actuator-side stop listener.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'stop_supervisor = hri_safety.nodes:stop_supervisor',
        ],
    },
)
