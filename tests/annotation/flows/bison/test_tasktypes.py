"""BISON's task pages word their instructions as the paper did (supplement A.2)."""

import pytest

from annotation.flows.bison.tasktypes import SIDE_WORDS
from annotation.flows.bison.vocabulary import BisonStage
from annotation.selectors.run_texts import instructions_default

pytestmark = pytest.mark.django_db

# BISON supplement A.2, "Stage 3 Instructions", items 2, 3 (heading), 4 and 5 word for word.
PAPER_STAGE3 = (
    "Image dimensions. Variations in object size due to differences in image dimensions "
    "should be considered as irrelevant.",
    "Most suitable image for a query.",
    "What if there are more than one image that are suitable for the provided text query? "
    'Please select the option "More than one image are suitable for the caption".',
    "What if none of images is suitable for the provided text query? Please select the "
    'option "None of above images is suitable for the caption".',
)


def test_stage3_instructions_and_options_are_the_papers_words(paired_run):
    text = " ".join(instructions_default(paired_run, BisonStage.VERIFICATION).split())
    for sentence in PAPER_STAGE3:
        assert sentence in text, sentence
    # The paper's item 3 body (copied from stage 2) calls the left image the positive; in
    # stage 3 the sides are random and the worker is not told which is positive.
    assert "positive" not in text.lower() and "left" not in text.lower()
    assert SIDE_WORDS["both"] == "More than one image are suitable for the caption"
    assert SIDE_WORDS["neither"] == "None of above images is suitable for the caption"
