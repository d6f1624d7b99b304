"""The calibrated world (issue 48): its figures land in the published intervals, its BISON
has invalid triples that verifiers confuse, its CxC tasks differ, and bad inputs are named."""

import pytest

from pipeline.calibration import Settings, cxc_ratings, table, targets
from pipeline.errors import InputError
from pipeline.flow_quality import bison
from pipeline.simulate import POPULATIONS, population_named, world_of
from pipeline.world import World
from tests.pipeline.conftest import REPO

FLICKR8K = REPO / "tests" / "data" / "flickr8k"
CXC = REPO / "data" / "sample" / "cxc"
# The fitted figures the stored fit misses (docs/quality.md, "The calibrated world"): none.
KNOWN_MISSES: set[str] = set()


def test_the_calibrated_crowd_lands_in_the_published_intervals():
    population = population_named("calibrated")
    rows = table(population, Settings(FLICKR8K, items=1500, seeds=3), targets(FLICKR8K, CXC))
    fitted = [r for r in rows if r["lands"] is not None and not r["held_out"]]
    assert len(fitted) >= 30
    missed = {r["label"] for r in fitted if not r["lands"]}
    assert missed <= KNOWN_MISSES, missed
    held_out = [r for r in rows if r["held_out"]]
    assert [r["label"] for r in held_out] == ["Flickr8k-CrowdFlower 3 votes unanimous"]


def test_the_calibrated_bison_keeps_invalid_triples_that_verifiers_confuse():
    def precision(name):
        figures = bison(population_named(name), range(2), pairs=1500, team=40)
        return next(f.value for f in figures if f.measure == "verified precision")

    assert precision("realistic") == 1.0  # the old world: no invalid triple passes
    assert precision("calibrated") < 0.99


def test_the_calibrated_world_gives_each_cxc_task_its_own_distribution():
    world = world_of(POPULATIONS["calibrated"], 0)
    fives = {
        kind: sum(world.cxc_similarity(kind, i, i + 1) == 5 for i in range(3000)) / 3000
        for kind in ("sis", "sts", "sits")
    }
    assert fives["sis"] < 0.01 and fives["sts"] < 0.02 and fives["sits"] > 0.4


def test_the_realistic_population_keeps_the_default_world():
    assert POPULATIONS["realistic"].world == ()
    assert world_of(POPULATIONS["realistic"], 4) == World(seed=4)


def test_a_cxc_file_with_a_bad_rating_is_named(tmp_path):
    (tmp_path / "sis_val.subset.csv").write_text(
        "image1,image2,agg_score,sampling_method\na.jpg,b.jpg,high,i2i_csim\n"
    )
    with pytest.raises(InputError, match=r"sis_val.subset.csv line 2: agg_score"):
        cxc_ratings(tmp_path)


def test_a_cxc_folder_without_a_task_is_named(tmp_path):
    (tmp_path / "sis_val.subset.csv").write_text("image1,image2,agg_score\na,b,1.0\n")
    with pytest.raises(InputError, match="no sts_"):
        cxc_ratings(tmp_path)


@pytest.mark.parametrize(
    "world_settings",
    [
        {"cxc_kind_shares": (("sis", (0.5, 0.5, 0.1, 0.0, 0.0, 0.0)),)},
        {"bison_confusable": 1.5},
        {"eccv_own_doubtful": -0.1},
        {"cxc_kind_top": (("sis", 6),)},
    ],
)
def test_bad_calibrated_world_settings_are_refused(world_settings):
    with pytest.raises(InputError):
        World(**world_settings)


def test_careful_sis_raters_stop_at_4_unless_the_pictures_are_near_identical():
    from random import Random

    from pipeline.simulate import Asked, rate

    careful = population_named("calibrated").profiles(1)[0]
    assert careful.behaviour == "careful" and careful.rating_noise
    rng = Random(3)
    below = [rate(careful, 4.4, range(6), rng, Asked(top=4)) for _ in range(2000)]
    free = [rate(careful, 4.4, range(6), rng, Asked()) for _ in range(2000)]
    identical = [rate(careful, 5.0, range(6), rng, Asked(top=4)) for _ in range(2000)]
    assert max(below) == 4 and free.count(5) > 100
    assert identical.count(5) > 500


@pytest.mark.parametrize("name", ["calibrated", "realistic"])
def test_a_run_config_carries_the_populations_world_through_json(name):
    import json

    from pipeline.simulate import world_config

    population = population_named(name)
    carried = json.loads(json.dumps(world_config(population)))
    assert World.from_settings(carried.get("world"), seed=7) == world_of(population, 7)


@pytest.mark.parametrize(
    "world_settings, field",
    [
        ({"cxc_kind_top": 4}, "world.cxc_kind_top"),
        ({"difficulty_shift": [["eccv"]]}, "world.difficulty_shift"),
        ({"oceans": 1}, "world"),
    ],
)
def test_a_bad_world_in_a_run_config_is_named(world_settings, field):
    with pytest.raises(InputError) as caught:
        World.from_settings(world_settings, seed=0)
    assert caught.value.field == field
