import pytest

from tests.factories import dataset_factory, paired_run_factory


@pytest.fixture
def dataset(db, tmp_path, image_dir):
    return dataset_factory(tmp_path, image_dir=image_dir)


@pytest.fixture
def paired_run(dataset, run_on_commit):
    return paired_run_factory(dataset, run_on_commit=run_on_commit)
