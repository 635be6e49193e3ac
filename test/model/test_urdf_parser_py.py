"""urdf_parser_py as the URDF reader: fed the safe lxml tree, silenced, errors named."""

import threading
import xml.etree.ElementTree as ET

import pytest
from urdf_parser_py import urdf as upp
import urdf_parser_py.xml_reflection as xmlr
from urdf_parser_py.xml_reflection import core as xmlr_core

from rbd_linearizer.errors import ModelError
from rbd_linearizer.model import build_model
from rbd_linearizer.model.urdf import MAX_PARSER_MESSAGES, parse_urdf

JOINT = ('<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="revolute">'
         '<parent link="a"/><child link="b"/><axis xyz="0 0 1"/>{}</joint></robot>')
NOISY = ('<robot name="r"><link name="a" colour="red"><contact/><inertial><mass value="1"/>'
         '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
         '<link name="b"/><joint name="j" type="revolute" dont_collapse="true"><parent link="a"/>'
         '<child link="b"/><axis xyz="0 0 1"/>'
         '<limit lower="-1" upper="1" effort="2" velocity="3" current="4"/></joint>'
         '<transmission name="t"><type>x</type></transmission></robot>')


def handler_is_default():
    return xmlr_core.on_error is xmlr_core.on_error_stderr and \
        xmlr.on_error is xmlr_core.on_error_stderr


def test_messages_are_captured_not_printed_and_handler_restored(capfd):
    description = parse_urdf(NOISY)
    assert handler_is_default()
    text = '\n'.join(description.parser_messages)
    for word in ('colour', 'contact', 'dont_collapse', 'current'):
        assert word in text
    assert 'transmission' not in text  # top-level blocks the dynamics ignore are not parsed
    with pytest.raises(ModelError):
        parse_urdf(JOINT.format('<limit lower="-1" upper="1"/>'))
    assert handler_is_default()
    out, err = capfd.readouterr()
    assert out == '' and err == ''


def test_message_count_is_bounded():
    flood = ' '.join(f'a{i}="1"' for i in range(3 * MAX_PARSER_MESSAGES))
    messages = parse_urdf(f'<robot name="r"><link name="x" {flood}/></robot>').parser_messages
    assert len(messages) == MAX_PARSER_MESSAGES + 1
    assert messages[-1] == f'... and {2 * MAX_PARSER_MESSAGES} more urdf_parser_py messages'


def test_urdf_parser_py_never_parses_text(monkeypatch):
    """The object model comes from the safe lxml tree: no (unsafe) stdlib re-parse."""
    def refuse(*_args, **_kwargs):
        raise AssertionError('urdf_parser_py must not parse text')
    monkeypatch.setattr(upp.URDF, 'from_xml_string', classmethod(refuse))
    monkeypatch.setattr(ET, 'fromstring', refuse)
    monkeypatch.setattr(ET, 'XML', refuse)
    assert len(parse_urdf(NOISY).joints) == 1


def test_values_come_through_urdf_parser_py(monkeypatch):
    seen = []
    original = upp.Joint.from_xml.__func__

    def spy(cls, node, path):
        joint = original(cls, node, path)
        seen.append(joint)
        return joint
    monkeypatch.setattr(upp.Joint, 'from_xml', classmethod(spy))
    joint = parse_urdf(NOISY).joints[0]
    assert [j.name for j in seen] == ['j']
    assert (joint.lower, joint.upper) == (seen[0].limit.lower, seen[0].limit.upper) == (-1, 1)


@pytest.mark.parametrize('inner, message', [
    ('<limit lower="-1" upper="1"/>', r"joint 'j' <limit effort> is missing"),
    ('<limit lower="-1" upper="1" effort="1" velocity="1_0"/>',
     r"joint 'j' <limit velocity> is not a number: '1_0'"),
    ('<limit lower="-1" upper="1" effort="inf" velocity="1"/>',
     r"joint 'j' <limit effort> is not finite"),
    ('<dynamics damping="nan"/>', r"joint 'j' <dynamics damping> is not finite"),
    ('<mimic/>', r"joint 'j' <mimic joint> is missing"),
    ('<calibration rising="abc"/>',
     r"joint 'j' <calibration rising>: rejected by urdf_parser_py: ValueError"),
])
def test_joint_errors_name_the_element(inner, message):
    with pytest.raises(ModelError, match=message):
        build_model(JOINT.format(inner))


@pytest.mark.parametrize('inner, message', [
    ('<visual/>', r"link 'a': <visual> has no <geometry>"),
    ('<visual><geometry><box size="1 1 1"/><sphere radius="1"/></geometry></visual>',
     r"link 'a': rejected by urdf_parser_py: AssertionError: One element only for geometric"),
    ('<inertial><mass/></inertial>', r"link 'a' <mass value> is missing"),
    ('<inertial><mass value="1"/><inertia ixx="1"/></inertial>',
     r"link 'a' <inertia ixy> is missing"),
])
def test_link_errors_name_the_element(inner, message):
    with pytest.raises(ModelError, match=message):
        build_model(f'<robot name="r"><link name="a">{inner}</link></robot>')


def test_missing_parent_link_attribute_is_not_the_string_none():
    text = ('<robot name="r"><link name="None"/><link name="b"/><joint name="j" type="fixed">'
            '<parent/><child link="b"/></joint></robot>')
    with pytest.raises(ModelError, match=r"joint 'j' has no <parent link=\.\.\.>"):
        build_model(text)


def test_concurrent_parses_keep_their_messages(capfd):
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(parse_urdf(NOISY).parser_messages)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 80 and all(r == results[0] for r in results)
    assert handler_is_default()
    out, err = capfd.readouterr()
    assert out == '' and err == ''
