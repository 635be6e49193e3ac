"""The bag tools use the typestore of the ROS 2 distribution in use (ROS_DISTRO), both of them."""

import pytest

pytest.importorskip('rosbags', reason='rosbags (constraints/common.txt, group bags) not installed')

from rosbags.typesys import Stores, get_typestore  # noqa: E402

from rbd_linearizer.tools import bag  # noqa: E402


@pytest.mark.parametrize('distro, store', [('jazzy', 'ROS2_JAZZY'), ('kilted', 'ROS2_KILTED'),
                                           ('Kilted', 'ROS2_KILTED'), ('rolling', 'LATEST')])
def test_store_name_follows_the_distro(distro, store):
    assert bag.store_name(distro) == store


def test_default_distro_is_jazzy(monkeypatch):
    monkeypatch.delenv('ROS_DISTRO', raising=False)
    assert bag.store_name() == 'ROS2_JAZZY'
    monkeypatch.setenv('ROS_DISTRO', 'kilted')
    assert bag.store_name() == 'ROS2_KILTED'


@pytest.mark.parametrize('distro', ['jazzy', 'kilted'])
def test_typestore_of_each_distro_registers_our_messages(monkeypatch, distro):
    monkeypatch.setenv('ROS_DISTRO', distro)
    monkeypatch.setattr(bag, '_TYPESTORE', None)
    store = bag.typestore()
    for name in bag.MESSAGES:
        assert f'rbd_linearizer/msg/{name}' in store.types
    # the standard messages are that distribution's (same definitions as rosbags ships for it)
    reference = get_typestore(Stores[bag.store_name(distro)])
    name = 'sensor_msgs/msg/JointState'
    assert store.types[name] == reference.types[name]
    monkeypatch.setattr(bag, '_TYPESTORE', None)
