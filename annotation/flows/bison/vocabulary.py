"""Values the BISON flow's modules share."""

# The stage-2 answer (and label) "None of the above captions are suitable".
NONE = "none"
