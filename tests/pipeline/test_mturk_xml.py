import pytest

from pipeline.errors import InputError
from pipeline.mturk_xml import answer_xml, external_question_xml, parse_answer_xml


def test_external_question_frames_https_only():
    xml = external_question_xml("https://crowd.example.org/mturk/hit/1/?a=1&b=2")
    assert "<ExternalURL>https://crowd.example.org/mturk/hit/1/?a=1&amp;b=2</ExternalURL>" in xml
    assert "<FrameHeight>0</FrameHeight>" in xml
    with pytest.raises(InputError, match="HTTPS"):
        external_question_xml("http://crowd.example.org/")


def test_answer_xml_round_trip_keeps_text():
    answers = {"q0": "none", "q1": "123", "q2": "a <b> & c"}
    assert parse_answer_xml(answer_xml(answers), record="A1") == answers


def test_mturk_style_answer_xml():
    xml = (
        '<?xml version="1.0" encoding="ASCII"?>'
        '<QuestionFormAnswers xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd">'
        "<Answer><QuestionIdentifier>q0</QuestionIdentifier><FreeText>left</FreeText></Answer>"
        "<Answer><QuestionIdentifier>q1</QuestionIdentifier><FreeText></FreeText></Answer>"
        "</QuestionFormAnswers>"
    )
    assert parse_answer_xml(xml, record="A1") == {"q0": "left", "q1": ""}


@pytest.mark.parametrize(
    ("xml", "match"),
    [
        ("<QuestionFormAnswers><Answer>", "malformed"),
        ("<Other/>", "expected <QuestionFormAnswers>"),
        (
            "<QuestionFormAnswers><Answer><FreeText>x</FreeText></Answer></QuestionFormAnswers>",
            "no QuestionIdentifier",
        ),
        (
            "<QuestionFormAnswers><Answer><QuestionIdentifier>q0</QuestionIdentifier></Answer>"
            "<Answer><QuestionIdentifier>q0</QuestionIdentifier></Answer></QuestionFormAnswers>",
            "answered twice",
        ),
    ],
)
def test_bad_answer_xml_names_the_assignment(xml, match):
    with pytest.raises(InputError, match=match) as err:
        parse_answer_xml(xml, record="assignment A9")
    assert err.value.record == "assignment A9"
