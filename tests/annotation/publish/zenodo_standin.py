"""A stateful stand-in of Zenodo's REST deposit API (developers.zenodo.org): depositions
(POST/GET/PUT /api/deposit/depositions[/<id>], the user's list paged by `page`/`size` and
filtered by `status`), files of a draft (GET .../<id>/files; PUT /api/files/<bucket>/<key>,
answered with `checksum: "md5:..."`), and the publish action (POST .../actions/publish: 202,
state `done`, a DOI). Ids are integers of Zenodo's size, buckets UUIDs. Errors in Zenodo's
shape: `{"status": n, "message": ...}`, a 400 with an `errors` list of `{field, message}`;
401 without a known token, 403 for another user's deposition or a published bucket, 404,
413 above `max_file_size`."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

from tests.annotation.publish.http_standin import Reply, Request, StandIn

UNAUTHORIZED = ("The server could not verify that you are authorized to access the URL "
                "requested. You either supplied the wrong credentials (e.g. a bad password), "
                "or your browser doesn't understand how to supply the credentials required.")  # fmt: skip
UPLOAD_TYPES = {"publication", "poster", "presentation", "dataset", "image", "video",
                "software", "lesson", "physicalobject", "other"}  # fmt: skip


def _error(status: int, message: str, errors: list[dict[str, Any]] | None = None) -> Reply:
    return Reply(
        status, {"status": status, "message": message, **({"errors": errors} if errors else {})}
    )  # noqa: E501


def _now() -> str:
    return datetime.now(UTC).isoformat()


class ZenodoStandIn(StandIn):
    def __init__(self, *, users: dict[str, int], max_file_size: int = 50 * 2**30) -> None:
        super().__init__()
        self.users = users  # token -> user id
        self.max_file_size = max_file_size
        self.depositions: dict[int, dict[str, Any]] = {}
        self.buckets: dict[str, dict[str, bytes]] = {}
        self.bucket_of: dict[int, str] = {}
        self.file_puts: list[str] = []

    def route(self, request: Request) -> Reply:
        token = request.bearer() or request.query.get("access_token", "")
        user = self.users.get(token)
        if user is None:
            return _error(401, UNAUTHORIZED)
        path, method = request.path, request.method
        if path == "/api/deposit/depositions":
            if method == "GET":
                return self._list(request, user)
            if method == "POST":
                return self._create(request, user)
        match = re.fullmatch(r"/api/files/(?P<bucket>[0-9a-f-]{36})/(?P<key>.+)", path)
        if match and method == "PUT":
            return self._put_file(match["bucket"], match["key"], request.body, user)
        match = re.fullmatch(r"/api/deposit/depositions/(?P<id>\d+)(?P<rest>/.*)?", path)
        if not match:
            return _error(404, "The requested URL was not found on the server.")
        deposition = self.depositions.get(int(match["id"]))
        if deposition is None:
            return _error(404, "PID does not exist.")
        if deposition["owner"] != user:
            return _error(403, "You don't have the permission to access the requested resource.")
        rest = match["rest"] or ""
        if rest == "" and method == "GET":
            return Reply(200, self._view(deposition))
        if rest == "" and method == "PUT":
            return self._update(deposition, request)
        if rest == "/files" and method == "GET":
            return Reply(200, self._files(deposition))
        if rest == "/actions/publish" and method == "POST":
            return self._publish(deposition)
        return _error(405, "The method is not allowed for the requested URL.")

    def _view(self, d: dict[str, Any]) -> dict[str, Any]:
        base = f"{self.url}/api/deposit/depositions/{d['id']}"
        links = {"self": base, "html": f"{self.url}/deposit/{d['id']}", "files": f"{base}/files",
                 "bucket": f"{self.url}/api/files/{self.bucket_of[d['id']]}",
                 "publish": f"{base}/actions/publish", "edit": f"{base}/actions/edit",
                 "discard": f"{base}/actions/discard", "newversion": f"{base}/actions/newversion"}  # fmt: skip
        if d["submitted"]:
            links |= {"record_html": f"{self.url}/records/{d['id']}",
                      "doi": f"https://doi.org/{d['doi']}"}  # fmt: skip
        return {**{k: v for k, v in d.items() if k != "owner"}, "owner": d["owner"],
                "links": links, "files": self._files(d)}  # fmt: skip

    def _files(self, d: dict[str, Any]) -> list[dict[str, Any]]:
        bucket = self.buckets[self.bucket_of[d["id"]]]
        return [{"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{d['id']}/{k}")), "filename": k,
                 "filesize": len(v), "checksum": hashlib.md5(v, usedforsecurity=False).hexdigest(),
                 "links": {"self": f"{self.url}/api/deposit/depositions/{d['id']}/files/{k}"}}
                for k, v in sorted(bucket.items())]  # fmt: skip

    def _list(self, request: Request, user: int) -> Reply:
        status = request.query.get("status")
        mine = [d for d in self.depositions.values() if d["owner"] == user]
        if status == "draft":
            mine = [d for d in mine if not d["submitted"]]
        elif status == "published":
            mine = [d for d in mine if d["submitted"]]
        mine.sort(key=lambda d: d["created"], reverse=True)
        page, size = int(request.query.get("page", 1)), int(request.query.get("size", 10))
        return Reply(200, [self._view(d) for d in mine[(page - 1) * size : page * size]])

    def _create(self, request: Request, user: int) -> Reply:
        body = request.json() or {}
        if not isinstance(body, dict):
            return _error(400, "Validation error.", [{"field": "", "message": "Invalid JSON."}])
        ident = secrets.randbelow(9_000_000) + 1_000_000
        while ident in self.depositions:
            ident = secrets.randbelow(9_000_000) + 1_000_000
        metadata = {**(body.get("metadata") or {}),
                    "prereserve_doi": {"doi": f"10.5072/zenodo.{ident}", "recid": ident}}  # fmt: skip
        self.depositions[ident] = {"id": ident, "record_id": ident, "conceptrecid": str(ident - 1),
                                   "created": _now(), "modified": _now(), "owner": user,
                                   "state": "unsubmitted", "submitted": False, "title": "",
                                   "doi": "", "doi_url": "", "metadata": metadata}  # fmt: skip
        bucket = str(uuid.uuid4())
        self.buckets[bucket] = {}
        self.bucket_of[ident] = bucket
        return Reply(201, self._view(self.depositions[ident]))

    def _invalid(self, metadata: dict[str, Any]) -> list[dict[str, str]]:
        errors = []
        if metadata.get("upload_type") not in UPLOAD_TYPES:
            errors.append({"field": "metadata.upload_type", "message": "Invalid value."})
        if not str(metadata.get("title") or "").strip():
            errors.append(
                {"field": "metadata.title", "message": "Missing data for required field."}
            )  # noqa: E501
        creators = metadata.get("creators")
        if not creators or not all(isinstance(c, dict) and c.get("name") for c in creators):
            errors.append(
                {"field": "metadata.creators", "message": "Missing data for required field."}
            )  # noqa: E501
        if not str(metadata.get("description") or "").strip():
            errors.append(
                {"field": "metadata.description", "message": "Missing data for required field."}
            )  # noqa: E501
        return errors

    def _update(self, d: dict[str, Any], request: Request) -> Reply:
        if d["submitted"]:
            return _error(400, "Deposition is not editable, use the edit action first.")
        metadata = (request.json() or {}).get("metadata") or {}
        errors = self._invalid(metadata)
        if errors:
            return _error(400, "Validation error.", errors)
        d["metadata"] = {**metadata, "prereserve_doi": d["metadata"]["prereserve_doi"]}
        d["title"], d["modified"] = metadata["title"], _now()
        return Reply(200, self._view(d))

    def _put_file(self, bucket: str, key: str, data: bytes, user: int) -> Reply:
        owner = next((i for i, b in self.bucket_of.items() if b == bucket), None)
        if owner is None:
            return _error(404, "Bucket does not exist.")
        d = self.depositions[owner]
        if d["owner"] != user or d["submitted"]:
            return _error(403, "You don't have the permission to access the requested resource.")
        if "/" in key:
            return _error(
                400,
                "Validation error.",
                [{"field": "key", "message": "Filename cannot contain slashes."}],
            )  # noqa: E501
        if len(data) > self.max_file_size:
            return _error(413, "Request entity too large.")
        self.buckets[bucket][key] = data
        self.file_puts.append(key)
        md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
        return Reply(201, {"key": key, "mimetype": "application/octet-stream", "checksum": f"md5:{md5}",
                           "version_id": str(uuid.uuid4()), "size": len(data), "created": _now(),
                           "updated": _now(), "is_head": True, "delete_marker": False,
                           "links": {"self": f"{self.url}/api/files/{bucket}/{key}"}})  # fmt: skip

    def _publish(self, d: dict[str, Any]) -> Reply:
        if d["submitted"]:
            return _error(400, "Deposition is already published.")
        errors = self._invalid(d["metadata"])
        if not self.buckets[self.bucket_of[d["id"]]]:
            errors.append({"message": "Minimum one file must be provided.", "code": 10})
        if errors:
            return _error(400, "Validation error.", errors)
        d |= {"submitted": True, "state": "done", "doi": d["metadata"]["prereserve_doi"]["doi"]}
        d["doi_url"] = f"https://doi.org/{d['doi']}"
        return Reply(202, self._view(d))
