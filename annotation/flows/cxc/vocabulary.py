"""Values the Crisscrossed Captions flow's modules share."""

# The core's run statuses in CxC's words: pairs are sampled, workers rate them.
STATUS_WORDS = {
    "preparing": "sampling",
    "prepared": "sampled",
    "collecting": "rating",
    "collected": "rated",
}
