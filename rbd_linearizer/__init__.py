"""rbd_linearizer: geometric linearization of moving-base robot dynamics, online, for ROS 2.

Importing this package is light: no numba compilation, no rclpy, no message import.
"""

import pkgutil

__version__ = '0.1.0'

# The rosidl-generated subpackages (msg, srv) and their extension modules are inside this
# package for regular installs. For editable installs they live in the installing environment
# (site-packages/rbd_linearizer-interfaces, named by site-packages/rbd_linearizer.pkg), so
# environments of different ROS 2 distributions can share this source tree.
__path__ = pkgutil.extend_path(__path__, __name__)
del pkgutil
