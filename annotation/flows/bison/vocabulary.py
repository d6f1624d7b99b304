"""Values the BISON flow's modules share."""

# The stage-2 answer (and label) "None of the above captions are suitable".
NONE = "none"

# The core's run statuses in BISON's words (the paper's stages: pairing, selection,
# verification), shown on its pages.
STATUS_WORDS = {
    "preparing": "pairing",
    "prepared": "paired",
    "collecting": "selecting",
    "collected": "selected",
    "collecting_2": "verifying",
    "collected_2": "verified",
}
