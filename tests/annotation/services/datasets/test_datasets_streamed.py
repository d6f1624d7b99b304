"""The import that writes while it reads (`_import_streamed`): files of several read windows,
whose bad records show only after batches were already sent to COPY, leave nothing."""

import json

import pytest

from annotation.models import Caption, Dataset, Image
from annotation.services.datasets.datasets import dataset_import
from pipeline.errors import InputError

pytestmark = pytest.mark.django_db

IMAGES, PER_IMAGE = 5000, 5  # about 2.5 MB: three of the reader's 1 MB windows


def big_document() -> dict:
    images = [
        {"id": i, "file_name": f"{i}.jpg", "coco_url": f"http://x/{i}.jpg", "width": 9}
        for i in range(1, IMAGES + 1)
    ]
    captions = [
        {"id": n, "image_id": 1 + n % IMAGES, "caption": f"caption {n}\twith\\tabs\nand lines"}
        for n in range(IMAGES * PER_IMAGE)
    ]
    return {"info": {"v": 1}, "images": images, "annotations": captions}


def write(tmp_path, doc: dict):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    assert path.stat().st_size > 2 * 1024 * 1024
    return path


def nothing_written() -> bool:
    return not (Dataset.objects.exists() or Image.objects.exists() or Caption.objects.exists())


def test_a_big_file_is_written_whole_with_text_as_given_and_progress_queries_work(tmp_path):
    doc = big_document()
    # A progress callback that queries (a job's is an UPDATE): never called inside a COPY.
    seen = []
    result = dataset_import(
        path=write(tmp_path, doc), progress=lambda p, m: seen.append((p, Dataset.objects.count()))
    )
    assert (result.images, result.captions) == (IMAGES, IMAGES * PER_IMAGE)
    assert Caption.objects.filter(dataset=result.dataset).count() == IMAGES * PER_IMAGE
    caption = Caption.objects.get(dataset=result.dataset, coco_id=12345)
    assert caption.text == "caption 12345\twith\\tabs\nand lines"
    assert caption.image.coco_id == 1 + 12345 % IMAGES
    assert Dataset.objects.get().info == {"v": 1}
    assert [p for p, _ in seen] == sorted(p for p, _ in seen) and len(seen) >= 3


@pytest.mark.parametrize(
    ("mutate", "record", "field"),
    [
        # Found by the database during the COPY (a second row with that id), named by the check.
        (lambda d: d["annotations"][-1].update(id=7), 7, "id"),
        (lambda d: d["annotations"][-1].update(image_id=10**9), IMAGES * PER_IMAGE - 1, "image_id"),
        (lambda d: d["annotations"][-1].update(caption=" "), IMAGES * PER_IMAGE - 1, "caption"),
        (lambda d: d["images"][0].update(coco_url=None), 1, "coco_url"),
    ],
    ids=["duplicate-caption-late", "unknown-image-late", "empty-caption-late", "no-url"],
)
def test_a_bad_record_found_after_batches_were_copied_writes_nothing(
    tmp_path, mutate, record, field
):
    doc = big_document()
    mutate(doc)
    with pytest.raises(InputError) as info:
        dataset_import(path=write(tmp_path, doc))
    assert (info.value.record, info.value.field) == (record, field)
    assert info.value.file.endswith("big.json")
    assert nothing_written()


def test_files_not_written_while_read_are_written_as_before(tmp_path):
    # Captions before images: kept, then written once the file passed.
    doc = big_document()
    doc = {"annotations": doc["annotations"], "images": doc["images"], "info": {}}
    first = dataset_import(path=write(tmp_path, doc), name="first")
    assert (first.images, first.captions) == (IMAGES, IMAGES * PER_IMAGE)

    # An image without captions whose name no column holds: left out, as before.
    doc = big_document()
    doc["images"].append({"id": 10**6, "file_name": "x" * 400})
    second = dataset_import(path=write(tmp_path, doc), name="second")
    assert (second.images, second.captions, second.skipped_images) == (
        IMAGES,
        IMAGES * PER_IMAGE,
        [10**6],
    )

    # Written while read, the image without captions is taken out again.
    doc = big_document()
    doc["images"].append({"id": 10**6, "file_name": "lonely.jpg"})
    third = dataset_import(path=write(tmp_path, doc), name="third")
    assert (third.images, third.skipped_images) == (IMAGES, [10**6])
    assert Image.objects.filter(dataset=third.dataset).count() == IMAGES
    assert not Image.objects.filter(coco_id=10**6).exists()
