"""A stateful stand-in of the Hugging Face Hub's HTTP API, the endpoints huggingface_hub 0.36
calls to publish a dataset (its hf_api.py, _commit_api.py and lfs.py; the Git LFS batch API):
POST /api/repos/create (409 with the repo's url when it exists), GET /api/datasets/<repo>
(and /revision/<rev>), GET .../tree/<rev> (recursive; paged by a `Link: rel="next"` header),
POST /api/validate-yaml, POST .../preupload/<rev> (upload mode per file: LFS by the repo's
.gitattributes, size or binary sample; the remote oid), POST <repo>.git/info/lfs/objects/batch
(basic transfer; no action for an object stored already), the upload PUT and verify POST, and
POST .../commit/<rev> (NDJSON; LFS pointers must name stored objects; parentCommit checked).
Errors as the Hub sends them: JSON `{"error": ...}` with X-Error-Code / X-Error-Message; 401
for a token it does not know. Commit oids are 40 random hex characters."""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import secrets
from typing import Any

from tests.annotation.publish.http_standin import Reply, Request, StandIn

GITATTRIBUTES = (
    b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.gz filter=lfs diff=lfs merge=lfs -text\n"
)
LFS_MIN = 10 * 1024 * 1024  # the Hub sends files from 10 MB by LFS whatever their name
PAGE = 50
REPO = r"/api/datasets/(?P<repo>[\w.-]+/[\w.-]+)"


def _git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _error(status: int, message: str, code: str = "") -> Reply:
    headers = {"X-Error-Message": message, **({"X-Error-Code": code} if code else {})}
    return Reply(status, {"error": message}, headers)


class HubStandIn(StandIn):
    def __init__(self, *, users: dict[str, str]) -> None:
        super().__init__()
        self.users = users  # token -> user name
        self.repos: dict[str, dict[str, Any]] = {}
        self.lfs: dict[str, bytes] = {}  # sha256 -> bytes
        self.uploads: dict[str, str] = {}  # upload id -> sha256 expected
        self.lfs_puts: list[str] = []  # sha256 of each upload PUT received

    # -- what a test reads
    def commits(self, repo: str) -> list[str]:
        return self.repos[repo]["commits"]

    def files(self, repo: str) -> dict[str, dict[str, Any]]:
        return self.repos[repo]["files"]

    # -- routing
    def route(self, request: Request) -> Reply:
        path, method = request.path, request.method
        if method == "PUT" and path.startswith("/lfs-upload/"):
            return self._lfs_put(request)  # a presigned URL: no token, as S3's
        user = self.users.get(request.bearer())
        if user is None:
            return _error(401, "Invalid credentials in Authorization header")
        if method == "POST" and path == "/api/repos/create":
            return self._create(request, user)
        if method == "POST" and path == "/api/validate-yaml":
            return self._validate(request)
        match = re.fullmatch(
            r"/datasets/(?P<repo>[\w.-]+/[\w.-]+)\.git/info/lfs/objects/(?P<op>batch|verify)", path
        )  # noqa: E501
        if match and method == "POST":
            repo = self._repo(match["repo"], user)
            if isinstance(repo, Reply):
                return repo
            return self._batch(request) if match["op"] == "batch" else self._verify(request)
        match = re.fullmatch(REPO + r"(?:/(?P<rest>.*))?", path)
        if not match:
            return _error(404, "Sorry, we can't find the page you are looking for.")
        repo = self._repo(match["repo"], user)
        if isinstance(repo, Reply):
            return repo
        rest = match["rest"] or ""
        if method == "GET" and (not rest or rest.startswith("revision/")):
            return self._info(match["repo"], repo)
        if method == "GET" and rest.startswith("tree/"):
            return self._tree(request, repo)
        if method == "POST" and rest.startswith("preupload/"):
            return self._preupload(request, repo)
        if method == "POST" and rest.startswith("commit/"):
            return self._commit(request, match["repo"], repo)
        return _error(404, "Sorry, we can't find the page you are looking for.")

    def _repo(self, repo_id: str, user: str) -> dict[str, Any] | Reply:
        repo = self.repos.get(repo_id)
        if repo is None or (repo["private"] and repo["owner"] != user):
            return _error(404, "Repository not found", "RepoNotFound")
        if repo["owner"] != user:
            return _error(403, "You don't have the rights to write to this repository")
        return repo

    def _create(self, request: Request, user: str) -> Reply:
        body = request.json()
        namespace = body.get("organization") or user
        if namespace != user:
            return _error(
                403,
                f'You don\'t have the rights to create a dataset under the namespace "{namespace}"',
            )  # noqa: E501
        repo_id = f"{namespace}/{body['name']}"
        url = f"{self.url}/datasets/{repo_id}"
        if body.get("type") != "dataset":
            return _error(400, "this stand-in keeps dataset repositories only")
        if repo_id in self.repos:
            return Reply(409, {"error": "You already created this dataset repo", "url": url})
        self.repos[repo_id] = {"owner": user, "private": bool(body.get("private")),
                               "commits": [], "files": {}}  # fmt: skip
        self._add(self.repos[repo_id], {".gitattributes": GITATTRIBUTES}, {})
        return Reply(200, {"url": url, "name": repo_id, "id": secrets.token_hex(12)})

    def _add(self, repo: dict[str, Any], regular: dict[str, bytes], lfs: dict[str, str]) -> str:
        for name, data in regular.items():
            repo["files"][name] = {"size": len(data), "oid": _git_sha1(data), "lfs": None,
                                   "data": data}  # fmt: skip
        for name, sha in lfs.items():
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(self.lfs[sha])}\n".encode()  # noqa: E501
            repo["files"][name] = {"size": len(self.lfs[sha]), "oid": _git_sha1(pointer),
                                   "lfs": sha, "pointer": len(pointer)}  # fmt: skip
        oid = secrets.token_hex(20)
        repo["commits"].append(oid)
        return oid

    def _info(self, repo_id: str, repo: dict[str, Any]) -> Reply:
        return Reply(200, {"_id": secrets.token_hex(12), "id": repo_id, "private": repo["private"],
                           "sha": repo["commits"][-1], "author": repo["owner"],
                           "siblings": [{"rfilename": n} for n in sorted(repo["files"])]})  # fmt: skip

    def _tree(self, request: Request, repo: dict[str, Any]) -> Reply:
        entries: list[dict[str, Any]] = []
        folders = sorted({n.rsplit("/", 1)[0] for n in repo["files"] if "/" in n})
        for folder in folders:
            entries.append(
                {"type": "directory", "oid": secrets.token_hex(20), "size": 0, "path": folder}
            )  # noqa: E501
        for name, f in sorted(repo["files"].items()):
            entry = {"type": "file", "oid": f["oid"], "size": f["size"], "path": name}
            if f["lfs"]:
                entry["lfs"] = {"oid": f["lfs"], "size": f["size"], "pointerSize": f["pointer"]}
            entries.append(entry)
        if request.query.get("recursive", "").lower() != "true":
            entries = [e for e in entries if "/" not in e["path"]]
        start = int(request.query.get("cursor", 0))
        page = entries[start : start + PAGE]
        headers = {}
        if start + PAGE < len(entries):
            query = f"recursive={request.query.get('recursive', 'False')}&expand=False&cursor={start + PAGE}"  # noqa: E501
            headers["Link"] = f'<{self.url}{request.path}?{query}>; rel="next"'
        return Reply(200, page, headers)

    def _validate(self, request: Request) -> Reply:
        import yaml

        content = request.json()["content"]
        try:
            header = content.split("---", 2)[1] if content.startswith("---") else ""
            data = yaml.safe_load(header) or {}
        except (IndexError, yaml.YAMLError) as exc:
            return Reply(400, {"errors": [{"message": f"Invalid YAML: {exc}"}]})
        if not isinstance(data, dict):
            return Reply(400, {"errors": [{"message": "The metadata must be a mapping"}]})
        return Reply(200, {"errors": [], "warnings": []})

    def _lfs_by_rule(self, repo: dict[str, Any], name: str, size: int, sample: bytes) -> bool:
        patterns = [
            line.split()[0]
            for line in repo["files"][".gitattributes"]["data"].decode().splitlines()
            if "filter=lfs" in line
        ]  # noqa: E501
        base = name.rsplit("/", 1)[-1]
        return size >= LFS_MIN or b"\0" in sample or any(fnmatch.fnmatch(base, p) for p in patterns)  # noqa: E501

    def _preupload(self, request: Request, repo: dict[str, Any]) -> Reply:
        files = []
        for f in request.json()["files"]:
            sample = base64.b64decode(f["sample"])
            mode = "lfs" if self._lfs_by_rule(repo, f["path"], f["size"], sample) else "regular"
            there = repo["files"].get(f["path"])
            entry = {"path": f["path"], "uploadMode": mode, "shouldIgnore": False}
            if there:
                entry["oid"] = there["lfs"] or there["oid"]
            files.append(entry)
        return Reply(200, {"files": files, "commitOid": repo["commits"][-1]})

    def _batch(self, request: Request) -> Reply:
        body = request.json()
        objects = []
        for item in body["objects"]:
            if item["oid"] in self.lfs:
                objects.append({"oid": item["oid"], "size": item["size"]})
                continue
            upload = secrets.token_hex(16)
            self.uploads[upload] = item["oid"]
            objects.append({"oid": item["oid"], "size": item["size"], "authenticated": True,
                            "actions": {"upload": {"href": f"{self.url}/lfs-upload/{upload}"},
                                        "verify": {"href": f"{self.url}{request.path[:-5]}verify"}}})  # fmt: skip
        return Reply(200, {"transfer": "basic", "objects": objects},
                     {"Content-Type": "application/vnd.git-lfs+json"})  # fmt: skip

    def _lfs_put(self, request: Request) -> Reply:
        sha = self.uploads.get(request.path.rsplit("/", 1)[1])
        if sha is None:
            return Reply(
                403,
                b"<Error><Code>AccessDenied</Code></Error>",
                {"Content-Type": "application/xml"},
            )  # noqa: E501
        if hashlib.sha256(request.body).hexdigest() != sha:
            return Reply(
                400, b"<Error><Code>BadDigest</Code></Error>", {"Content-Type": "application/xml"}
            )  # noqa: E501
        self.lfs[sha] = request.body
        self.lfs_puts.append(sha)
        return Reply(
            200, b"", {"ETag": f'"{hashlib.md5(request.body, usedforsecurity=False).hexdigest()}"'}
        )  # noqa: E501

    def _verify(self, request: Request) -> Reply:
        body = request.json()
        if body["oid"] not in self.lfs or len(self.lfs[body["oid"]]) != body["size"]:
            return Reply(404, {"message": "Object not found"})
        return Reply(200, {})

    def _commit(self, request: Request, repo_id: str, repo: dict[str, Any]) -> Reply:
        lines = [json.loads(x) for x in request.body.decode().splitlines() if x.strip()]
        header = next(x["value"] for x in lines if x["key"] == "header")
        parent = header.get("parentCommit")
        if parent and parent != repo["commits"][-1]:
            return _error(412, "A commit has happened since. Please refresh and try again.")
        regular, lfs = {}, {}
        for line in lines:
            value = line["value"]
            if line["key"] == "file":
                regular[value["path"]] = base64.b64decode(value["content"])
            elif line["key"] == "lfsFile":
                if value["oid"] not in self.lfs:
                    return _error(
                        400,
                        "Your push was rejected because an LFS pointer pointed to a file that does not exist",
                    )  # noqa: E501
                lfs[value["path"]] = value["oid"]
        oid = self._add(repo, regular, lfs)
        return Reply(200, {"success": True, "commitOid": oid, "hookOutput": "",
                           "commitUrl": f"{self.url}/datasets/{repo_id}/commit/{oid}",
                           "pullRequestUrl": None})  # fmt: skip
