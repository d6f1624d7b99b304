"""Participant groups as study filters: the project block (one group per workspace that every
study excludes) and each stage's pool of a run (a study of one stage excludes the groups of
the stages that must be done by other people). Membership is read by Prolific when a
participant looks for studies, so a group changed after publishing still applies. Each group
is created once (`remote_calls`): a second attempt or a lost answer finds it by its name."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone

from annotation.crowd.prolific.client import ProlificClient
from annotation.crowd.prolific.filters import KNOWN
from annotation.flow_registry import disjoint_stages
from annotation.models import (
    Batch,
    BlockQualification,
    EventAction,
    PoolMembership,
    PoolQualification,
    Worker,
)
from annotation.selectors.counting import pool_members_ungranted
from annotation.selectors.installation import installation_id
from annotation.services.events import event_record
from annotation.services.jobs.remote_calls import remote_call_once

PROVIDER = "prolific"
BLOCKLIST = KNOWN["group_blocklist"].filter_id


def _group_look_up(*, name: str, client: ProlificClient) -> str | None:
    """A live group of the workspace by its name (every page), else None."""
    workspace = settings.CROWDVL_PROLIFIC_WORKSPACE
    for group in client.pages("participant-groups/", params={"workspace_id": workspace}):
        if group.get("name") == name and not group.get("is_deleted"):
            return str(group["id"])
    return None


def _group_once(*, name: str, client: ProlificClient) -> str:
    """The group called `name` (unique to this installation), created at Prolific once."""
    workspace = settings.CROWDVL_PROLIFIC_WORKSPACE

    def send() -> str:
        body = client.call(
            "POST", "participant-groups/", json={"workspace_id": workspace, "name": name}
        )
        return str(body["id"])

    return remote_call_once(
        provider=PROVIDER,
        operation="group.create",
        key=f"prolific|group|{workspace}|{name}",
        send=send,
        look_up=lambda: _group_look_up(name=name, client=client),
        data={"workspace": workspace, "name": name},
    )


def block_group(*, client: ProlificClient, create: bool) -> str | None:
    """The workspace's project-block group (created on first use when `create`)."""
    workspace = settings.CROWDVL_PROLIFIC_WORKSPACE
    found = BlockQualification.objects.filter(provider=PROVIDER, environment=workspace).first()
    if found is not None or not create:
        return found.qualification_id if found else None
    gid = _group_once(name=f"crowdvl {installation_id()} blocked", client=client)
    found, _ = BlockQualification.objects.get_or_create(
        provider=PROVIDER, environment=workspace, defaults={"qualification_id": gid}
    )
    return found.qualification_id


def block_group_add(*, worker: Worker, client: ProlificClient) -> None:
    gid = block_group(client=client, create=True)
    client.call(
        "POST",
        f"participant-groups/{gid}/participants/",
        json={"participant_ids": [worker.external_id]},
        idempotent=True,  # the reference: existing members are ignored
    )


def block_group_remove(*, worker: Worker, client: ProlificClient) -> None:
    gid = block_group(client=client, create=False)
    if gid:
        client.call(
            "DELETE",
            f"participant-groups/{gid}/participants/",
            json={"participant_ids": [worker.external_id]},
        )


def pool_groups(*, batch: Batch, client: ProlificClient) -> dict[str, str]:
    """The run's pool group of each stage that must stay disjoint from the batch's, created
    once and saved at once."""
    ids: dict[str, str] = {}
    for stage in disjoint_stages(batch.stage):
        row = PoolQualification.objects.filter(
            run=batch.run, stage=stage, provider=PROVIDER, environment=""
        ).first()
        if row is None:
            gid = _group_once(
                name=f"crowdvl {installation_id()} run {batch.run_id} {stage} pool", client=client
            )
            row, _ = PoolQualification.objects.get_or_create(
                run=batch.run,
                stage=stage,
                provider=PROVIDER,
                environment="",
                defaults={"qualification_id": gid},
            )
            event_record(
                action=EventAction.PROLIFIC_POOL_GROUP_CREATED,
                run=batch.run,
                batch=batch,
                data={"stage": stage, "group": row.qualification_id},
            )
        ids[stage] = row.qualification_id
    return ids


def study_group_filters(*, batch: Batch, client: ProlificClient) -> list[dict[str, Any]]:
    """The blocklist of a study: the other stages' pools of the run and the project block."""
    others = [
        gid
        for stage, gid in pool_groups(batch=batch, client=client).items()
        if stage != batch.stage
    ]
    blocked = block_group(client=client, create=True)
    groups = [*others, *([blocked] if blocked else [])]
    return [{"filter_id": BLOCKLIST, "selected_values": groups}] if groups else []


def pool_grant_pending(*, batch: Batch, client: ProlificClient) -> int:
    """Put the batch's participants with counted work in their stage's pool group."""
    row = PoolQualification.objects.filter(
        run=batch.run, stage=batch.stage, provider=PROVIDER, environment=""
    ).first()
    if row is None:
        return 0
    pending = pool_members_ungranted(batch=batch)
    members = list(pending.select_related("worker"))
    if not members:
        return 0
    client.call(
        "POST",
        f"participant-groups/{row.qualification_id}/participants/",
        json={"participant_ids": [m.worker.external_id for m in members]},
        idempotent=True,  # the reference: existing members are ignored
    )
    PoolMembership.objects.filter(pk__in=[m.pk for m in members]).update(granted_at=timezone.now())
    return len(members)
