"""config/linearizer.yaml mirrors the parameter table (rbd_linearizer/online/params.py).

Also: validation of single values and of the parallel wrench-input arrays; the node declares
every row with its descriptor and range.
"""

import pathlib
import re

import pytest
import yaml

from rbd_linearizer.errors import ConfigError
from rbd_linearizer.online import params as P

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config' / 'linearizer.yaml'


def _yaml():
    doc = yaml.safe_load(CONFIG.read_text(encoding='utf-8'))
    return doc['/**']['ros__parameters']


def test_yaml_has_every_parameter_with_its_default():
    values = _yaml()
    text = CONFIG.read_text(encoding='utf-8')
    for p in P.PARAMETERS:
        if isinstance(p.default, list):
            # rcl's YAML parser cannot hold [], so the row is a comment
            assert p.name not in values
            assert re.search(rf'^\s*# {p.name}: \[\]$', text, re.M), p.name
        else:
            assert p.name in values, p.name
            assert values[p.name] == p.default, p.name
            assert type(values[p.name]) is type(p.default), p.name
    assert set(values) <= set(P.by_name())


def test_defaults_pass_validation():
    cfg = {p.name: P.validate(p.name, p.default) for p in P.PARAMETERS}
    assert P.validate_config(cfg) is cfg


@pytest.mark.parametrize('name, value', [
    ('rate_hz', 0.0), ('rate_hz', 'fast'), ('dt', -1.0), ('tick_mode', 'sometimes'),
    ('velocity_representation', 'sideways'), ('max_joints', -1), ('publish_dynamics', 1),
    ('actuated_joints', 'q1'), ('actuated_joints', [1, 2]), ('nope', 1),
    ('higher_order_derivatives', -1), ('higher_order_derivatives', 11),
    ('higher_order_derivatives', 2.0), ('higher_order_derivatives', True),
])
def test_bad_values_are_rejected_with_a_reason(name, value):
    with pytest.raises(ConfigError, match=name):
        P.validate(name, value)


def test_int_is_accepted_for_a_float_and_lists_are_copied():
    assert P.validate('rate_hz', 200) == 200.0
    assert P.validate('actuated_joints', ('a', 'b')) == ['a', 'b']


def test_wrench_arrays_are_parallel_and_build_the_input_selection():
    cfg = P.defaults()
    cfg.update(wrench_input_frames=['a', 'b'], wrench_input_kinds=['wrench'])
    with pytest.raises(ConfigError, match='parallel'):
        P.validate_config(cfg)
    cfg.update(wrench_input_kinds=['wrench', 'torque'])
    with pytest.raises(ConfigError, match='torque'):
        P.validate_config(cfg)
    cfg.update(wrench_input_kinds=[], wrench_input_expressed_in=['local', 'world'],
               actuated_joints=['j2', 'j1'])
    sel = P.input_selection(P.validate_config(cfg))
    assert sel.joints == ('j2', 'j1')
    assert [(w.frame, w.kind, w.expressed_in) for w in sel.wrenches] == [
        ('a', 'force', 'local'), ('b', 'force', 'world')]
    cfg.update(actuated_joints=['j1', 'j1'])
    with pytest.raises(ConfigError, match='twice'):
        P.validate_config(cfg)
    assert P.input_selection(P.defaults()).joints is None


def test_higher_order_derivatives_need_local_wrench_inputs():
    cfg = P.defaults()
    assert cfg['higher_order_derivatives'] == 0  # off by default
    assert P.validate('higher_order_derivatives', 10) == 10
    cfg.update(higher_order_derivatives=3)
    assert P.validate_config(cfg) is cfg  # no wrench input
    for rep in ('mixed', 'inertial'):  # converted exactly (online/terms.py)
        assert P.validate_config(dict(cfg, velocity_representation=rep))
    cfg.update(wrench_input_frames=['a', 'b'], wrench_input_expressed_in=['local', 'local'])
    assert P.validate_config(cfg) is cfg
    for expressed in (['local', 'world'], []):  # [] = all 'world'
        with pytest.raises(ConfigError, match="'local' frames"):
            P.validate_config(dict(cfg, wrench_input_expressed_in=expressed))
    # off: world wrenches are fine
    assert P.validate_config(dict(cfg, higher_order_derivatives=0, wrench_input_expressed_in=[]))


def test_node_declares_every_parameter_with_descriptor_and_range():
    rclpy = pytest.importorskip('rclpy', reason='rclpy (ROS 2 wheels) is not installed')
    from rbd_linearizer.ros.node import LinearizerLifecycleNode

    context = rclpy.context.Context()
    rclpy.init(context=context)
    try:
        node = LinearizerLifecycleNode(context=context)
        try:
            for p in P.PARAMETERS:
                d = node.describe_parameter(p.name)
                assert d.read_only == p.read_only, p.name
                assert d.description == p.description
                value = node.get_parameter(p.name).value
                assert (list(value) if isinstance(p.default, list) else value) == p.default
                if p.low is not None:
                    r = d.integer_range or d.floating_point_range
                    assert r[0].from_value == p.low and r[0].to_value == p.high, p.name
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
