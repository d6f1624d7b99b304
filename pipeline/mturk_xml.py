"""MTurk's XML formats: the ExternalQuestion we send and the QuestionFormAnswers we get back.

Pure text handling; no boto3 here.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

from pipeline.errors import InputError

EXTERNAL_QUESTION_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
MAX_FRAME_HEIGHT = 0  # 0 lets MTurk size the frame to the page


def external_question_xml(url: str, *, frame_height: int = MAX_FRAME_HEIGHT) -> str:
    """The Question parameter that frames `url` (which must be HTTPS) inside MTurk."""
    if not url.startswith("https://"):
        raise InputError(f"MTurk frames only HTTPS pages, got {url!r}", field="public_url")
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
        f"<ExternalURL>{escape(url)}</ExternalURL>"
        f"<FrameHeight>{frame_height}</FrameHeight></ExternalQuestion>"
    )


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_answer_xml(xml: str, *, record: str) -> dict[str, str]:
    """The {QuestionIdentifier: FreeText} pairs of an assignment's answer XML.

    Raises InputError naming the assignment (`record`) when the XML is malformed or an answer
    has no identifier or appears twice.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise InputError(f"answer XML is malformed: {exc}", record=record, field="Answer") from None
    if _local(root.tag) != "QuestionFormAnswers":
        raise InputError(
            f"answer XML root is <{_local(root.tag)}>, expected <QuestionFormAnswers>",
            record=record,
            field="Answer",
        )
    answers: dict[str, str] = {}
    for answer in root:
        if _local(answer.tag) != "Answer":
            continue
        fields = {_local(child.tag): (child.text or "") for child in answer}
        key = fields.get("QuestionIdentifier", "").strip()
        if not key:
            raise InputError("an answer has no QuestionIdentifier", record=record, field="Answer")
        if key in answers:
            raise InputError(f"question {key!r} is answered twice", record=record, field=key)
        answers[key] = fields.get("FreeText", "")
    return answers


def answer_xml(answers: dict[str, str]) -> str:
    """Build QuestionFormAnswers XML (what MTurk stores after externalSubmit); used in tests
    and by tools that replay answers."""
    ns = (
        "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/"
        "QuestionFormAnswers.xsd"
    )
    parts = [
        f"<Answer><QuestionIdentifier>{escape(k)}</QuestionIdentifier>"
        f"<FreeText>{escape(v)}</FreeText></Answer>"
        for k, v in answers.items()
    ]
    return f'<?xml version="1.0" encoding="UTF-8"?><QuestionFormAnswers xmlns="{ns}">{"".join(parts)}</QuestionFormAnswers>'
