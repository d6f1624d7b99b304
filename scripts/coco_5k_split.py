"""Write data/eccv/coco_5k_test_image_ids.json: the COCO 5k test split (Karpathy) that ECCV
Caption draws its queries and gallery from, read from the `eccv-caption` wheel's own data
(`eccv_caption/data/original_image_to_caption.json`, MIT, (c) NAVER Corp.).

Run once with the dev extra installed: .venv/bin/python scripts/coco_5k_split.py
"""

import hashlib
import json
from importlib import metadata, resources
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "data" / "eccv" / "coco_5k_test_image_ids.json"


def main() -> None:
    source = resources.files("eccv_caption") / "data" / "original_image_to_caption.json"
    raw = source.read_bytes()
    image_ids = sorted(int(k) for k in json.loads(raw))
    doc = {
        "name": "COCO 5k test split (Karpathy), as used by ECCV Caption",
        "source": (
            f"eccv-caption=={metadata.version('eccv-caption')} (PyPI wheel), "
            "eccv_caption/data/original_image_to_caption.json: its keys"
        ),
        "source_sha256": hashlib.sha256(raw).hexdigest(),
        "license": "MIT, (c) NAVER Corp. (naver-ai/eccv-caption)",
        "image_ids": image_ids,
    }
    ids = doc.pop("image_ids")
    head = json.dumps(doc, indent=1)[:-2]  # the object without its closing brace
    rows = ",\n".join(" " + ", ".join(map(str, ids[i : i + 12])) for i in range(0, len(ids), 12))
    OUT.write_text(f'{head},\n "image_ids": [\n{rows}\n ]\n}}\n')
    print(f"{len(image_ids)} image ids -> {OUT}")


if __name__ == "__main__":
    main()
