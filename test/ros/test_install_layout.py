"""The installed package is where ROS 2 tools look, and works with no extra environment.

Checks what launch_ros / ros2 run / ros2 interface rely on (ament index, share/, lib/<pkg>/),
where the generated interfaces live (inside the package for regular installs; for editable
installs in this environment's site-packages, so venvs of different ROS 2 distributions can
share one source tree), $ORIGIN RUNPATHs of the generated libraries, and that a process started
with an empty environment can import and publish the custom messages and find the package in
the ament index.
"""

import ast
import importlib.metadata
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys
import sysconfig

import pytest

ament_index = pytest.importorskip('ament_index_python.packages')

ROOT = Path(__file__).resolve().parents[2]
PKG = 'rbd_linearizer'
INTERFACES_DIR = f'{PKG}-interfaces'  # setup.py: editable installs, below site-packages


def _is_editable() -> bool:
    direct = importlib.metadata.distribution(PKG).read_text('direct_url.json')
    return bool(direct) and bool(json.loads(direct).get('dir_info', {}).get('editable'))


def _generated_dir() -> Path:
    """Return the directory holding the generated msg/, srv/ and extension modules."""
    import rbd_linearizer.msg
    return Path(rbd_linearizer.msg.__file__).resolve().parent.parent


def test_share_directory_holds_package_files():
    share = Path(ament_index.get_package_share_directory(PKG))
    for rel in ('package.xml', 'launch/linearizer.launch.py', 'config/linearizer.yaml',
                'msg/Linearization.msg', 'msg/Matrix.msg', 'msg/MultibodyState.msg',
                'msg/DynamicsTerms.msg', 'srv/Linearize.srv', 'msg/Linearization.idl'):
        assert (share / rel).is_file(), f'{rel} missing from {share}'
    prefix = Path(ament_index.get_package_prefix(PKG))
    marker = prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / PKG
    assert marker.is_file()


def test_installed_share_files_are_current():
    share = Path(ament_index.get_package_share_directory(PKG))
    for rel in ('package.xml', 'launch/linearizer.launch.py', 'config/linearizer.yaml'):
        if (ROOT / rel).is_file():
            assert (share / rel).read_bytes() == (ROOT / rel).read_bytes(), \
                f'installed {rel} is stale: run scripts/test (or reinstall)'


def test_executables_where_launch_ros_looks():
    lib = Path(ament_index.get_package_prefix(PKG)) / 'lib' / PKG
    for exe in ('linearizer_node', 'rbd-linearizer'):
        path = lib / exe
        assert path.is_file() and os.access(path, os.X_OK), f'{path} missing or not executable'


def test_interfaces_registered_in_ament_index():
    from ament_index_python.resources import get_resource
    content, _ = get_resource('rosidl_interfaces', PKG)
    entries = set(content.split())
    assert {'msg/Linearization.msg', 'msg/Matrix.msg', 'msg/MultibodyState.msg',
            'msg/DynamicsTerms.msg', 'srv/Linearize.srv'} <= entries


def test_generated_python_in_one_place_with_its_extension_modules():
    import rbd_linearizer.msg
    import rbd_linearizer.srv
    gen = _generated_dir()
    assert Path(rbd_linearizer.srv.__file__).resolve().parent == gen / 'srv'
    assert list(gen.glob(f'{PKG}_s__rosidl_typesupport_c*.so'))
    if _is_editable():
        # This environment's own copy, in its site-packages, named by rbd_linearizer.pkg.
        sites = {Path(sysconfig.get_path(k)).resolve() for k in ('platlib', 'purelib')}
        assert gen.parent in sites and gen.name == INTERFACES_DIR, gen
        pkg_file = gen.parent / f'{PKG}.pkg'
        assert str(gen) in [str(Path(line).resolve()) for line in
                            pkg_file.read_text().splitlines() if not line.startswith('#')]
        assert str(gen) in [str(Path(p).resolve()) for p in rbd_linearizer.__path__]
    else:
        assert gen == Path(rbd_linearizer.__file__).resolve().parent


def test_editable_source_tree_holds_no_generated_interfaces():
    # Two venvs (e.g. Jazzy and Kilted) share the source tree: generated code there would be
    # one distribution's, shadowing the other's.
    if not _is_editable():
        pytest.skip('not an editable install (e.g. a wheel or colcon install)')
    assert not (ROOT / PKG / 'msg').exists()
    assert not (ROOT / PKG / 'srv').exists()
    assert not list((ROOT / PKG).glob(f'{PKG}_s__rosidl_typesupport_*.so'))


_IMPORT_PROBE = r"""
import json, sys
import rbd_linearizer
light = not any(m in sys.modules for m in ('rclpy', 'numba', 'rbd_linearizer.msg'))
import rbd_linearizer.msg
import rbd_linearizer.srv
print(json.dumps({'init': rbd_linearizer.__file__, 'light': light,
                  'msg': rbd_linearizer.msg.__file__, 'srv': rbd_linearizer.srv.__file__}))
"""


def test_package_and_interfaces_import_from_outside_the_source_tree():
    # cwd '/': the source tree is not on sys.path (pytest runs from it). A directory named
    # rbd_linearizer without __init__.py in site-packages would be returned as a namespace
    # package before setuptools' editable finder runs, hiding the hand-written package.
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    proc = subprocess.run([sys.executable, '-c', _IMPORT_PROBE], env=env, cwd='/',
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    import rbd_linearizer
    assert out['init'] == rbd_linearizer.__file__
    assert out['light'], 'import rbd_linearizer pulled in rclpy, numba or the messages'
    gen = _generated_dir()
    assert Path(out['msg']).resolve() == gen / 'msg' / '__init__.py'
    assert Path(out['srv']).resolve() == gen / 'srv' / '__init__.py'


@pytest.mark.skipif(not shutil.which('readelf'), reason='readelf (binutils) not installed')
def test_generated_libraries_have_origin_runpath():
    prefix = Path(ament_index.get_package_prefix(PKG))
    libs = sorted((prefix / 'lib').glob(f'lib{PKG}__rosidl_*.so'))
    assert len(libs) >= 8
    exts = sorted(_generated_dir().glob(f'{PKG}_s__rosidl_*.so'))
    assert len(exts) == 3
    for so in libs + exts:
        out = subprocess.run(['readelf', '-d', str(so)], capture_output=True, text=True,
                             check=True).stdout
        runpath = [line for line in out.splitlines() if 'RUNPATH' in line or 'RPATH' in line]
        assert runpath and '$ORIGIN' in runpath[0], f'{so.name}: {runpath}'


_CLEAN_ENV_SCRIPT = r"""
import os
from ament_index_python.packages import get_package_share_directory
print('share', get_package_share_directory('rbd_linearizer'))
import rclpy
from rbd_linearizer.msg import Linearization
rclpy.init()
node = rclpy.create_node('rbd_clean_env_probe')
pub = node.create_publisher(Linearization, 'rbd_clean_env_probe', 1)
msg = Linearization()
msg.a.rows = 1
msg.a.cols = 1
msg.a.data = [float('nan')]
pub.publish(msg)
node.destroy_node()
rclpy.shutdown()
print('published')
"""


def test_works_with_an_empty_environment():
    # No AMENT_PREFIX_PATH, LD_LIBRARY_PATH, PYTHONPATH...: only the interpreter itself.
    env = {'PATH': '/usr/bin:/bin', 'HOME': os.environ.get('HOME', '/tmp'),
           'ROS_DOMAIN_ID': os.environ.get('ROS_DOMAIN_ID', '0'),
           'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    if 'AMENT_PREFIX_PATH' in os.environ and str(sys.prefix) not in os.environ[
            'AMENT_PREFIX_PATH'].split(os.pathsep):
        pytest.skip('package installed in a sourced ROS workspace, not in this venv')
    proc = subprocess.run([sys.executable, '-c', _CLEAN_ENV_SCRIPT], env=env, cwd='/',
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'published' in proc.stdout
    assert f'share {sys.prefix}' in proc.stdout


def test_launch_file_starts_the_node_of_this_package():
    tree = ast.parse((ROOT / 'launch' / 'linearizer.launch.py').read_text())
    funcs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in funcs
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    nodes = [c for c in calls if getattr(c.func, 'id', None) in ('Node', 'LifecycleNode')]
    assert nodes
    # package= / executable= given directly or through a dict(...) spread into the actions
    kw = [k for c in calls for k in c.keywords if k.arg in ('package', 'executable')]
    values = {(k.arg, getattr(k.value, 'value', None)) for k in kw}
    assert values == {('package', PKG), ('executable', 'linearizer_node')}, values


def test_package_xml_is_a_valid_ament_python_interface_package():
    catkin_pkg = pytest.importorskip('catkin_pkg.package')
    pkg = catkin_pkg.parse_package(str(ROOT / 'package.xml'))
    assert pkg.package_format == 3 and pkg.name == PKG
    assert pkg.get_build_type() == 'ament_python'
    assert 'rosidl_interface_packages' in [g.name for g in pkg.member_of_groups]
    buildtool = {d.name for d in pkg.buildtool_depends}
    assert {'ament_cmake', 'rosidl_default_generators'} <= buildtool
    exec_deps = {d.name for d in pkg.exec_depends + pkg.run_depends}
    assert {'rclpy', 'std_msgs', 'geometry_msgs', 'sensor_msgs', 'nav_msgs', 'diagnostic_msgs',
            'rosidl_default_runtime', 'python3-numpy', 'python3-scipy', 'urdfdom_py'} <= (
        exec_deps | {d.name for d in pkg.build_export_depends})
    import rbd_linearizer
    assert pkg.version == rbd_linearizer.__version__


def test_editable_install_imports_the_source_tree():
    # scripts/bootstrap installs editable: source edits are tested without reinstalling.
    if not _is_editable():
        pytest.skip('not an editable install (e.g. a wheel or colcon install)')
    import rbd_linearizer
    assert Path(rbd_linearizer.__file__).resolve().parent == ROOT / PKG
    import rbd_linearizer.results
    assert Path(rbd_linearizer.results.__file__).resolve() == ROOT / PKG / 'results.py'
