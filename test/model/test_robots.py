"""Bundled default robot and the example-robot-data locator."""

import pytest

from rbd_linearizer.model import build_model, robots


def test_default_robot_urdf_is_the_shared_aerial_manipulator():
    text = robots.default_robot_urdf()
    assert text.lstrip().startswith('<?xml')
    assert '<robot name="seed002_aerial_manipulator">' in text
    assert build_model(text).n_joints == 6


def test_example_robot_locator(monkeypatch, tmp_path):
    root = robots.example_robot_data_dir()
    if root is None:
        pytest.skip('example-robot-data is not installed')
    assert robots.example_robot_urdf('go2') == root / robots.EXAMPLE_ROBOTS['go2']
    assert robots.example_robot_urdf('go2_description/urdf/go2.urdf').is_file()
    with pytest.raises(FileNotFoundError, match='no_such_robot'):
        robots.example_robot_urdf('no_such_robot')
    (tmp_path / 'mine').mkdir()
    (tmp_path / 'mine' / 'r.urdf').write_text('<robot name="r"><link name="a"/></robot>')
    monkeypatch.setenv('EXAMPLE_ROBOT_DATA_MODEL_DIR', str(tmp_path))
    assert robots.example_robot_data_dir() == tmp_path
    assert build_model(robots.example_robot_urdf('mine/r.urdf')).name == 'r'


def test_locator_reports_missing_package(monkeypatch):
    monkeypatch.setattr(robots, 'example_robot_data_dir', lambda: None)
    with pytest.raises(FileNotFoundError, match='not installed'):
        robots.example_robot_urdf('go2')
