"""Zenodo through its REST deposit API (https://developers.zenodo.org/) with `requests`, at
CROWDVL_ZENODO_URL / ZENODO_URL or --endpoint (https://sandbox.zenodo.org for trials), with
ZENODO_TOKEN sent as a Bearer header (never in a URL, so no log line holds it).

Steps: a draft deposition, made once (`remote_call_once`; the publication's reference is in
its notes, so after a lost answer the user's drafts are searched for it); its metadata (a PUT,
safe to repeat); each file PUT into the draft's bucket unless the draft holds it with the same
md5 already; then, only when every file's checksum at Zenodo matches and nothing else is in the
draft, the publish action (made once, looked up after a lost answer). Zenodo receives the
release bundle (every file with SHA256SUMS; its bucket keeps no folders) and the card,
Croissant file and datasheet beside it for readers."""

from __future__ import annotations

from typing import Any

import requests
from django.conf import settings

from annotation.errors import RemoteUnclear, ServiceError
from annotation.models import Export, Publication
from annotation.publish.base import ReleaseFile, Say, redacted, release_file
from annotation.selectors.release.exports import export_bundle_path, export_folder
from annotation.services.jobs.remote_calls import remote_call_once
from annotation.services.release.release_bundle import export_bundle_write

BESIDE = ("README.md", "croissant.json", "DATASHEET.md")  # readable without unpacking
TIMEOUT = (10, 300)  # connect, read: a large file's PUT takes a while
PAGE = 100


class ZenodoClient:
    """Zenodo's JSON calls; errors in words, the token never in them. Nothing is retried."""

    def __init__(self, *, base: str, token: str) -> None:
        self.base, self.token = base.rstrip("/"), token
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, *, unclear: bool = False, **kwargs: Any) -> Any:
        """`unclear`: a call with an effect, whose lost answer is `RemoteUnclear`."""
        url = path if path.startswith("http") else f"{self.base}{path}"
        try:
            response = self.session.request(method, url, timeout=TIMEOUT, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as exc:
            text = f"no answer from Zenodo to {method} {path}: {redacted(str(exc), self.token)}"
            raise (RemoteUnclear if unclear else ServiceError)(text) from None
        if response.status_code >= 400:
            raise ServiceError(self._refusal(method, path, response))
        return response.json() if response.content else None

    def _refusal(self, method: str, path: str, response: requests.Response) -> str:
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = {}
        message = str(body.get("message") or response.reason or "")
        details = "; ".join(
            f"{e.get('field', '')}: {e.get('message', '')}".strip(": ")
            for e in body.get("errors") or []
            if isinstance(e, dict)
        )
        hint = {
            401: " (ZENODO_TOKEN missing, wrong or expired)",
            403: " (the token lacks the deposit:write / deposit:actions scope, or the "
            "deposition is not yours)",
            413: " (the file is larger than Zenodo takes)",
            429: " (too many requests: wait, then publish again)",
        }.get(status, "")
        text = f"Zenodo refused {method} {path}: {status} {message}{hint}"
        return redacted(text + (f" [{details}]" if details else ""), self.token)


class ZenodoDestination:
    name = "zenodo"

    def __init__(self, *, endpoint: str | None = None) -> None:
        self.endpoint = (endpoint or settings.CROWDVL_ZENODO_URL).rstrip("/")

    def target(self, requested: str) -> str:
        return self.endpoint

    def location(self, publication_target: str) -> str:
        return f"{publication_target}/api/deposit/depositions (a new deposition, then published)"

    def files(self, export: Export) -> list[ReleaseFile]:
        _metadata(export, "")  # refused before anything is packed or sent
        bundle = export_bundle_path(export)
        if not bundle.is_file():
            bundle, _ = export_bundle_write(export=export)  # the same bytes each time
        folder = export_folder(export)
        return [
            release_file(name=bundle.name, path=bundle),
            *(release_file(name=n, path=folder / n) for n in BESIDE if (folder / n).is_file()),
        ]

    def publish(self, *, publication: Publication, files: list[ReleaseFile], say: Say) -> None:
        token = settings.CROWDVL_ZENODO_TOKEN
        if not token:
            raise ServiceError("ZENODO_TOKEN is not set: a Zenodo personal access token is needed")
        client = ZenodoClient(base=self.endpoint, token=token)
        marker = f"crowdvl publication {publication.reference}"
        deposition_id = remote_call_once(
            provider=self.name,
            operation="create deposition",
            key=f"publication:{publication.pk}:deposition",
            send=lambda: str(
                client.call(
                    "POST",
                    "/api/deposit/depositions",
                    json={"metadata": {"notes": marker}},
                    unclear=True,
                )["id"]
            ),  # fmt: skip
            look_up=lambda: _draft_with(client, marker),
        )
        publication.remote_id = deposition_id
        publication.save(update_fields=["remote_id", "updated_at"])
        path = f"/api/deposit/depositions/{deposition_id}"
        deposition = client.call("GET", path)
        if deposition.get("submitted"):
            say(f"deposition {deposition_id} was published before")
        else:
            say(f"draft deposition {deposition_id}")
            client.call("PUT", path, json={"metadata": _metadata(publication.export, marker)})
            _upload(client, deposition, files, publication, say)
            _checked(client, path, files)
            deposition = _published(client, publication, path)
        _check_record(deposition, files)
        publication.files_done = sorted(f.name for f in files)
        links = deposition.get("links") or {}
        publication.remote_url = str(
            links.get("record_html")
            or links.get("html")
            or f"{self.endpoint}/records/{deposition_id}"
        )
        say(f"published: {publication.remote_url} (doi {deposition.get('doi', 'pending')})")


def _draft_with(client: ZenodoClient, marker: str) -> str | None:
    """The user's draft whose notes hold `marker` (made by a call whose answer was lost)."""
    for page in range(1, 51):
        found = client.call(
            "GET",
            "/api/deposit/depositions",
            params={"status": "draft", "size": PAGE, "page": page},
        )
        for deposition in found:
            if marker in str((deposition.get("metadata") or {}).get("notes", "")):
                return str(deposition["id"])
        if len(found) < PAGE:
            return None
    return None


def _metadata(export: Export, marker: str) -> dict[str, Any]:
    release = export.manifest.get("release") or {}
    creators = release.get("creators") or []
    if not creators:
        raise ServiceError(
            "Zenodo needs the creators' names: set them for the run or the export "
            "(--creator), export again, then publish"
        )
    run = export.run
    return {
        "upload_type": "dataset",
        "title": f"{export.format} labels, crowdvl run {run.pk}"
        + (f" ({run.name})" if run.name else "")
        + f", v{export.version}",
        "creators": [{"name": str(c)} for c in creators],
        "description": "<p>Crowdsourced image-caption labels exported by crowdvl. The "
        "bundle holds the Parquet record sets, the papers' own files, croissant.json, the "
        "dataset card (README.md), DATASHEET.md and SHA256SUMS.</p>",
        "license": str(release.get("license")),
        "version": f"v{export.version}",
        "access_right": "open",
        "keywords": ["crowdsourcing", "image captioning", "croissant"],
        "notes": marker,
    }


def _files_there(client: ZenodoClient, deposition_id: str) -> dict[str, str]:
    listed = client.call("GET", f"/api/deposit/depositions/{deposition_id}/files")
    return {f["filename"]: f["checksum"] for f in listed}


def _upload(client: ZenodoClient, deposition: dict[str, Any], files: list[ReleaseFile],
            publication: Publication, say: Say) -> None:  # fmt: skip
    there = _files_there(client, str(deposition["id"]))
    bucket = deposition["links"]["bucket"]
    done = [f.name for f in files if there.get(f.name) == f.md5]
    say(f"{len(done)} file(s) already in the draft with the same checksum")
    for f in files:
        if f.name in done:
            continue
        with f.path.open("rb") as handle:  # a PUT to one key: the same file again replaces it
            answer = client.call("PUT", f"{bucket}/{f.name}", data=handle)
        if str(answer.get("checksum", "")).removeprefix("md5:") != f.md5:
            raise ServiceError(f"Zenodo stored {f.name} with another checksum: publish again")
        done.append(f.name)
        publication.files_done = sorted(done)
        publication.save(update_fields=["files_done", "updated_at"])
        say(f"uploaded {f.name} ({f.size} bytes)")


def _checked(client: ZenodoClient, path: str, files: list[ReleaseFile]) -> None:
    """Publishing is final: only when the draft holds exactly these files, each checksum equal."""
    there = _files_there(client, path.rsplit("/", 1)[1])
    wrong = [f.name for f in files if there.get(f.name) != f.md5]
    extra = sorted(set(there) - {f.name for f in files})
    if wrong or extra:
        raise ServiceError(
            "not published: the draft's files differ from the release "
            f"(missing or changed: {', '.join(wrong) or 'none'}; not ours: "
            f"{', '.join(extra) or 'none'}); publish again, or remove the others at Zenodo"
        )


def _published(client: ZenodoClient, publication: Publication, path: str) -> dict[str, Any]:
    def look_up() -> str | None:
        deposition = client.call("GET", path)
        return str(deposition["record_id"]) if deposition.get("submitted") else None

    remote_call_once(
        provider="zenodo",
        operation="publish",
        key=f"publication:{publication.pk}:publish",
        send=lambda: str(client.call("POST", f"{path}/actions/publish", unclear=True)["record_id"]),
        look_up=look_up,
    )
    return client.call("GET", path)


def _check_record(deposition: dict[str, Any], files: list[ReleaseFile]) -> None:
    there = {f["filename"]: f["checksum"] for f in deposition.get("files") or []}
    wrong = [f.name for f in files if there.get(f.name) != f.md5]
    if wrong:
        raise ServiceError(
            f"deposition {deposition['id']} is PUBLISHED but its files differ from this "
            f"release ({', '.join(wrong)}): check it at Zenodo; a new version is needed"
        )
