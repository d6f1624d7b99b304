"""How simulated ECCV Caption workers judge (`annotation/flows/eccv/simulate.py`): an original
COCO pair used as gold is YES, unless the run's world makes it doubtful (the calibrated crowd's
gold that careful workers fail together)."""

from annotation.flows.eccv.simulate import latent_level
from annotation.models import Caption, Item
from pipeline.world import ECCV_LEVELS, World


def test_an_original_pair_used_as_gold_is_doubtful_only_in_a_world_that_says_so(eccv_run):
    caption = Caption.objects.filter(dataset=eccv_run.dataset).select_related("image").first()
    gold = Item(run=eccv_run, kind="gold_positive", positive=caption.image, caption=caption)
    assert ECCV_LEVELS[latent_level(gold, World(seed=3))] == "yes"
    doubtful = World(seed=3, eccv_own_doubtful=1.0)
    assert ECCV_LEVELS[latent_level(gold, doubtful)] == "mostly_no"
