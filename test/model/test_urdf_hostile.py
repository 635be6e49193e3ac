"""Hostile and broken URDFs: each must raise ModelError naming the offending element.

"Quickly" is checked by what the parser did, not by the wall clock: a DTD or entity declaration
is rejected before any XML parsing (lxml is never called), and without that pre-check lxml's
own limits refuse the bomb (entity amplification, nesting depth) instead of expanding it. The
whole corpus also runs in one subprocess with a hang guard and its slowest case printed
(``test/reliability/test_hostile_urdf.py::test_whole_corpus_in_bounded_memory_without_a_hang``).
"""

import pathlib
import re

import pytest

from rbd_linearizer.errors import ModelError
from rbd_linearizer.model import ParseLimits, build_model
from rbd_linearizer.model import urdf as urdf_module

CORPUS = pathlib.Path(__file__).resolve().parents[1] / 'resources' / 'urdf'

# file -> regular expression the error message must match (it names the element).
EXPECTED = {
    'bomb.urdf': r'<!DOCTYPE declaration',
    'external_entity.urdf': r'<!DOCTYPE declaration',
    'cycle.urdf': r'no root link.*closed kinematic loop',
    'two_parents.urdf': r"link 'l3' has two parents \(joints 'j3' and 'j4'\)",
    'two_roots.urdf': r"multiple root links.*'base', 'orphan'",
    'planar_joint.urdf': r"joint 'slider_plane' has unsupported type 'planar'",
    'floating_joint.urdf': r"joint 'free_inside' has unsupported type 'floating'",
    'nan_origin.urdf': r"joint 'j_nan' <origin xyz> is not finite",
    'inf_rpy.urdf': r"joint 'j_inf' <origin rpy> is not finite",
    'nan_axis.urdf': r"joint 'j_axis' <axis xyz> is not finite",
    'nan_limit.urdf': r"joint 'j_lim' <limit upper> is not finite",
    'nan_inertia.urdf': r"link 'heavy' <inertia ixx> is not finite",
    'negative_mass.urdf': r"link 'anti': negative mass -0.5",
    'non_psd_inertia.urdf': r"link 'warped': inertia is not positive semi-definite",
    'triangle_inertia.urdf': r"link 'needle': principal moments .* triangle inequality",
    'mimic.urdf': r"mimic joints are not supported: joint 'follower' mimics 'j1'",
    'mimic_unknown.urdf': r"joint 'follower' mimics unknown joint 'ghost'",
    'empty.urdf': r'URDF is empty',
    'not_xml.urdf': r'not well-formed XML',
    'truncated.urdf': r'not well-formed XML',
    'wrong_root.urdf': r'root element is <sdf>, not <robot>',
    'zero_axis.urdf': r"joint 'j_zero' has a zero <axis xyz>",
    'duplicate_link.urdf': r"duplicate link name\(s\): 'l1'",
    'duplicate_joint.urdf': r"duplicate joint name\(s\): 'j1'",
    'missing_child.urdf': r"joint 'j_dangling': child link 'nowhere' does not exist",
    'unknown_joint_type.urdf': r"joint 'j_weird' has unknown type 'screw'",
    'bad_number.urdf': r"joint 'j_text' <origin xyz> is not a number: 'ten'",
    'xacro_unexpanded.urdf': r'unexpanded xacro element <xacro:property>',
    'inertial_no_mass.urdf': r"link 'hollow': <inertial> has no <mass>",
}
# When passed as a string instead of a path, a few messages differ.
EXPECTED_AS_TEXT = dict(EXPECTED, **{'not_xml.urdf': r'not XML and not an existing file'})


def test_corpus_is_present_and_valid_files_build():
    present = {p.name for p in CORPUS.glob('*.urdf')}
    assert set(EXPECTED) <= present
    for name in sorted(present - set(EXPECTED)):  # valid robots (tiny*, other tests' files)
        assert build_model(CORPUS / name).nb >= 1


#: Rejected by the DTD / entity pre-check, before the XML parser sees a byte.
BEFORE_PARSING = {'bomb.urdf', 'external_entity.urdf'}


@pytest.fixture
def xml_parses(monkeypatch):
    """Count the calls of lxml's ``etree.fromstring`` made by the URDF reader."""
    calls = []
    real = urdf_module.etree.fromstring

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(urdf_module.etree, 'fromstring', spy)
    return calls


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_hostile_file_rejected(name, xml_parses):
    with pytest.raises(ModelError, match=EXPECTED[name]):
        build_model(CORPUS / name)
    if name in BEFORE_PARSING:  # no expansion can happen: lxml never ran
        assert xml_parses == []


def test_the_xml_parse_spy_sees_the_parser(xml_parses):
    build_model(CORPUS / 'tiny.urdf')
    assert xml_parses == [1]  # (else the check above would prove nothing)


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_hostile_text_rejected(name):
    text = (CORPUS / name).read_text()
    with pytest.raises(ModelError, match=EXPECTED_AS_TEXT[name]):
        build_model(text)
    # Also as a str path.
    with pytest.raises(ModelError, match=EXPECTED[name]):
        build_model(str(CORPUS / name))


def test_xml_parser_itself_does_not_expand_entities(monkeypatch):
    """Defence in depth: without the DOCTYPE pre-check, lxml still refuses bombs and XXE."""
    monkeypatch.setattr(urdf_module, '_DECLARATION', re.compile(rb'(?!)'))
    # lxml stops at its amplification limit / refuses the external reference (its messages)
    for name, message in (('bomb.urdf', 'Maximum entity amplification factor exceeded'),
                          ('external_entity.urdf', "references external entity 'xxe'")):
        with pytest.raises(ModelError, match=message):
            build_model(CORPUS / name)


def test_huge_bomb_without_doctype_check_is_refused_not_expanded(monkeypatch):
    monkeypatch.setattr(urdf_module, '_DECLARATION', re.compile(rb'(?!)'))
    entities = ['<!ENTITY e0 "' + 'x' * 100 + '">']
    entities += [f'<!ENTITY e{i} "' + f'&e{i - 1};' * 10 + '">' for i in range(1, 12)]
    text = ('<?xml version="1.0"?><!DOCTYPE robot [' + ''.join(entities) + ']>'
            '<robot name="b"><link name="base"><visual>&e11;</visual></link></robot>')
    # 10^11 copies of 100 bytes if expanded: lxml's amplification limit stops it first
    with pytest.raises(ModelError, match='Maximum entity amplification factor exceeded'):
        build_model(text)


def test_doctype_rejected_case_insensitive_and_spaced():
    with pytest.raises(ModelError, match='DOCTYPE'):
        build_model('<?xml version="1.0"?><!doctype robot>'
                    '<robot name="r"><link name="a"/></robot>')
    with pytest.raises(ModelError, match='ENTITY'):
        build_model('<robot name="r"><!ENTITY x "y"><link name="a"/></robot>')


def test_parse_limits():
    text = (CORPUS / 'tiny.urdf').read_text()
    with pytest.raises(ModelError, match='max_bytes=100'):
        build_model(text, limits=ParseLimits(max_bytes=100))
    with pytest.raises(ModelError, match='max_bytes=100'):
        build_model(CORPUS / 'tiny.urdf', limits=ParseLimits(max_bytes=100))
    with pytest.raises(ModelError, match='6 joints > max_joints=5'):
        build_model(text, limits=ParseLimits(max_joints=5))
    with pytest.raises(ModelError, match='7 links > max_links=6'):
        build_model(text, limits=ParseLimits(max_links=6))
    with pytest.raises(ModelError, match="deeper than max_depth=4 at link 'carriage'"):
        build_model(text, limits=ParseLimits(max_depth=4))
    assert build_model(text, limits=ParseLimits(max_depth=5)).nb == 4
    with pytest.raises(AttributeError):
        ParseLimits().max_bytes = 1  # frozen


def test_deep_xml_nesting_and_attribute_flood_are_rejected():
    # libxml2's nesting limit (not Python recursion), then a lexical check on the flooded joint
    with pytest.raises(ModelError, match='Excessive depth'):
        build_model('<robot name="d">' + '<a>' * 100_000 + '</a>' * 100_000 + '</robot>')
    many = ' '.join(f'a{i}="1"' for i in range(100_000))
    with pytest.raises(ModelError, match="joint 'j' has no <parent link=...>"):
        build_model(f'<robot name="d"><link name="x"/><joint name="j" type="fixed" {many}/>'
                    '</robot>')


def test_deep_chain_within_limits_has_no_recursion_problem():
    n = 900
    links = ''.join(f'<link name="l{i}"/>' for i in range(n + 1))
    joints = ''.join(
        f'<joint name="j{i}" type="continuous"><parent link="l{i}"/><child link="l{i + 1}"/>'
        '</joint>' for i in range(n))
    model = build_model(f'<robot name="chain">{links}{joints}</robot>',
                        limits=ParseLimits(max_depth=1000))
    assert model.nb == n + 1
    assert model.depth == n + 1
    with pytest.raises(ModelError, match='max_depth=256'):
        build_model(f'<robot name="chain">{links}{joints}</robot>')


def test_bad_arguments():
    with pytest.raises(ModelError, match='not bytes'):
        build_model(b'<robot/>')
    with pytest.raises(ModelError, match='not int'):
        build_model(3)
    with pytest.raises(ModelError, match='cannot read URDF file'):
        build_model(CORPUS / 'does_not_exist.urdf')
    with pytest.raises(ModelError, match='is not XML and not an existing file'):
        build_model('does_not_exist.urdf')
    with pytest.raises(ModelError, match='URDF is empty'):
        build_model('   \n ')
    with pytest.raises(ModelError, match='floating_base must be'):
        build_model(CORPUS / 'tiny.urdf', floating_base='yes')
    with pytest.raises(ModelError, match="mimic must be 'reject' or 'independent'"):
        build_model(CORPUS / 'tiny.urdf', mimic='follow')


def test_python_only_number_syntax_rejected():
    inertial = ('<inertial><mass value="1_0"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                'izz="1"/></inertial>')
    with pytest.raises(ModelError, match="link 'a' <mass value> is not a number: '1_0'"):
        build_model(f'<robot name="r"><link name="a">{inertial}</link></robot>')


def test_non_utf8_file(tmp_path):
    path = tmp_path / 'latin1.urdf'
    path.write_bytes('<robot name="caf\u00e9"><link name="a"/></robot>'.encode('latin-1'))
    with pytest.raises(ModelError, match='not UTF-8'):
        build_model(path)


def test_no_output_on_stdout_or_stderr(capfd):
    build_model(CORPUS / 'tiny.urdf')
    with pytest.raises(ModelError):
        build_model(CORPUS / 'mimic.urdf')
    out, err = capfd.readouterr()
    assert out == '' and err == ''
