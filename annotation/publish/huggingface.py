"""The Hugging Face Hub through its official client (`huggingface_hub.HfApi`, at the
endpoint of CROWDVL_HF_ENDPOINT / HF_ENDPOINT or --endpoint, with HF_TOKEN). The repository is
made with `exist_ok` (safe to repeat); files already in it with the same checksum (LFS: sha256;
kept in git: the blob's sha1) are skipped; the rest go in ONE commit, so the Hub never shows
half a version. The commit is a call with an effect: recorded first (`remote_call_once`), and
after a lost answer the repository's files are looked up instead of committing again."""

from __future__ import annotations

import hashlib
from typing import Any

import requests
from django.conf import settings

from annotation.errors import RemoteUnclear, ServiceError
from annotation.models import Export, Publication
from annotation.publish.base import ReleaseFile, Say, redacted, release_file
from annotation.selectors.release.exports import export_file_entries
from annotation.services.jobs.remote_calls import remote_call_once

REPO_TYPE = "dataset"


class HubDestination:
    name = "huggingface"

    def __init__(self, *, endpoint: str | None = None, private: bool = False) -> None:
        self.endpoint = (endpoint or settings.CROWDVL_HF_ENDPOINT).rstrip("/")
        self.private = private

    def target(self, requested: str) -> str:
        parts = requested.strip().split("/")
        if len(parts) != 2 or not all(parts):
            raise ServiceError(f"--to huggingface: {requested!r} is no repo id (<owner>/<name>)")
        return requested.strip()

    def location(self, publication_target: str) -> str:
        return f"{self.endpoint}/datasets/{publication_target} (dataset repository, one commit)"

    def files(self, export: Export) -> list[ReleaseFile]:
        # The version folder as it is: README.md is the card, data/ the configs' files.
        return [release_file(name=f.name, path=f.path) for f in export_file_entries(export)]

    def _api(self) -> tuple[Any, str]:
        try:
            from huggingface_hub import HfApi
        except ImportError:  # an optional extra of the app
            raise ServiceError(
                "publishing to the Hub needs huggingface_hub: pip install 'crowdvl[publish]'"
            ) from None
        token = settings.CROWDVL_HF_TOKEN
        if not token:
            raise ServiceError("HF_TOKEN is not set: a Hub token with write access is needed")
        return HfApi(endpoint=self.endpoint, token=token), token

    def publish(self, *, publication: Publication, files: list[ReleaseFile], say: Say) -> None:
        from huggingface_hub import constants

        # huggingface_hub reads some answers (a commit's URL) against its global endpoint,
        # set from HF_ENDPOINT at import: the chosen endpoint (--endpoint) for this call.
        before = constants.ENDPOINT
        constants.ENDPOINT = self.endpoint
        try:
            self._publish(publication=publication, files=files, say=say)
        finally:
            constants.ENDPOINT = before

    def _publish(self, *, publication: Publication, files: list[ReleaseFile], say: Say) -> None:
        api, token = self._api()
        repo = publication.target
        with _plain_errors(token, f"the Hub ({self.endpoint})"):
            api.create_repo(repo, repo_type=REPO_TYPE, private=self.private, exist_ok=True)
            publication.remote_id = repo
            present = _present(api, repo)
        todo = [f for f in files if not _same(present.get(f.name), f)]
        publication.files_done = sorted(f.name for f in files if f not in todo)
        publication.save(update_fields=["remote_id", "files_done", "updated_at"])
        say(f"{len(files) - len(todo)} file(s) already at the Hub with the same checksum")
        if todo:
            say(f"committing {len(todo)} file(s) to {repo}")
            # The set of files names the intent: a second attempt at the same set looks first.
            digest = hashlib.sha256(
                "".join(f"{f.name}:{f.sha256}\n" for f in todo).encode()
            ).hexdigest()[:16]

            def send() -> str:
                return _commit(api, token, repo, todo, self.endpoint)

            def look_up() -> str | None:
                with _plain_errors(token, f"the Hub ({self.endpoint})"):
                    there = _present(api, repo)
                    done = all(_same(there.get(f.name), f) for f in todo)
                    head = api.dataset_info(repo).sha if done else None
                return str(head) if head else None

            remote_call_once(
                provider=self.name,
                operation="commit",
                key=f"publication:{publication.pk}:commit:{digest}",
                send=send,
                look_up=look_up,
                data={"files": [f.name for f in todo]},
            )
        with _plain_errors(token, f"the Hub ({self.endpoint})"):
            there = _present(api, repo)
        missing = [f.name for f in files if not _same(there.get(f.name), f)]
        if missing:
            raise ServiceError(
                f"the Hub's {repo} lacks {len(missing)} file(s) after the commit "
                f"({', '.join(missing[:5])}): publish again to send them"
            )
        publication.files_done = sorted(f.name for f in files)
        publication.remote_url = f"{self.endpoint}/datasets/{repo}"
        say(f"published: {publication.remote_url}")


def _present(api: Any, repo: str) -> dict[str, tuple[str, str]]:
    """The repository's files: path -> ("lfs", sha256) or ("git", blob sha1)."""
    out = {}
    for entry in api.list_repo_tree(repo, repo_type=REPO_TYPE, recursive=True):
        if getattr(entry, "blob_id", None) is None:
            continue  # a folder
        lfs = getattr(entry, "lfs", None)
        out[entry.path] = ("lfs", lfs.sha256) if lfs else ("git", entry.blob_id)
    return out


def _same(there: tuple[str, str] | None, mine: ReleaseFile) -> bool:
    if there is None:
        return False
    kind, digest = there
    return digest == (mine.sha256 if kind == "lfs" else mine.git_sha1)


def _commit(api: Any, token: str, repo: str, todo: list[ReleaseFile], endpoint: str) -> str:
    from huggingface_hub import CommitOperationAdd

    operations = [
        CommitOperationAdd(path_in_repo=f.name, path_or_fileobj=str(f.path)) for f in todo
    ]
    try:
        with _plain_errors(token, f"the Hub ({endpoint})"):
            info = api.create_commit(
                repo,
                repo_type=REPO_TYPE,
                operations=operations,
                commit_message=f"crowdvl release: {len(todo)} file(s)",
            )
    except _NoAnswer as exc:
        raise RemoteUnclear(str(exc)) from None
    return str(info.oid)


class _NoAnswer(ServiceError):
    """The connection broke or timed out: the call may have taken effect."""


class _plain_errors:
    """The client's errors as ServiceError with the token blanked out (a lost answer as
    `_NoAnswer`); nothing is retried here."""

    def __init__(self, token: str, where: str) -> None:
        self.token, self.where = token, where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, ServiceError):
            return
        from huggingface_hub.errors import HfHubHTTPError

        text = redacted(str(exc), self.token)
        if isinstance(exc, requests.ConnectionError | requests.Timeout):
            raise _NoAnswer(f"no answer from {self.where}: {text}") from None
        if isinstance(exc, HfHubHTTPError) and exc.response is not None:
            status = exc.response.status_code
            if status == 401:
                raise ServiceError(
                    f"{self.where} refused the token (401): set HF_TOKEN to a token with write "
                    "access"
                ) from None
            raise ServiceError(f"{self.where} answered {status}: {text}") from None
        if isinstance(exc, RuntimeError | ValueError | OSError):
            cause = exc.__cause__ or exc.__context__
            more = f" ({redacted(str(cause), self.token)})" if cause else ""
            raise ServiceError(f"{self.where}: {text}{more}") from None
