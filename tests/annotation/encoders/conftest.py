import shutil

import pytest

from tests.tiny_models import tiny_clip, tiny_siglip

# A CxC run small enough for the sample's few images (the encoder tests' sampling runs).
SMALL_CXC = {
    "sis_pairs": 6,
    "sts_pairs": 6,
    "cocaption_pairs": 4,
    "intrasim_pairs": 4,
    "original_pairs": 5,
    "neighbours": 3,
    "random_per_example": 2,
    "text_epochs": 5,
    "text_dim": 16,
}


@pytest.fixture(scope="session")
def _tiny_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {"clip": tiny_clip(root / "tiny-clip"), "siglip": tiny_siglip(root / "tiny-siglip")}


@pytest.fixture
def import_dir(settings, tmp_path, _tiny_models):
    """CROWDVL_IMPORT_DIR holding the tiny CLIP and SigLIP folders."""
    folder = tmp_path / "import"
    for name, source in _tiny_models.items():
        shutil.copytree(source, folder / f"tiny-{name}")
    settings.CROWDVL_IMPORT_DIR = folder
    return folder
