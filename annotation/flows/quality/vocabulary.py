"""Values the caption-quality flow's modules share."""

# The core's run statuses in the caption-quality flow's words: workers judge captions.
STATUS_WORDS = {
    "collecting": "judging",
    "collected": "judged",
}
