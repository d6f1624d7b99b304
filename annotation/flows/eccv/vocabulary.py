"""Values the ECCV Caption flow's modules share."""

# The core's run statuses in ECCV's words: models propose, workers judge.
STATUS_WORDS = {
    "preparing": "proposing",
    "prepared": "proposed",
    "collecting": "judging",
    "collected": "judged",
}
