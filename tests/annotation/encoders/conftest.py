import shutil

import pytest

from tests.tiny_models import tiny_clip, tiny_siglip


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
