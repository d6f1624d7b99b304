"""Domain tables. No side effects here: state changes live in services (annotation/services)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

# Columns that hold ids made by a crowd platform, sized from the platforms' references (each
# provider declares its longest ids, `CrowdProvider.id_shapes`; a contract test stores them):
# Prolific's are 24 hexadecimal characters, MTurk's at most 64, a panel worker's its panel's
# name (20), ':' and the participant's id (64); Prolific's HIT ids add "/<HIT pk>" to a study's.
EXTERNAL_ID_LENGTH = 100
# A provider's environment: MTurk's "sandbox" / "production", Prolific's workspace id (24).
ENVIRONMENT_LENGTH = 64


class ImageSource(models.TextChoices):
    COCO_URL = "coco_url", "The file's coco_url"
    URL_PREFIX = "url_prefix", "URL prefix + file_name"
    LOCAL_DIR = "local_dir", "Local folder served by this app"


class Installation(models.Model):
    """This database's identity (one row): random, made once, carried by every MTurk token and
    name so a second database on the same AWS account never adopts this one's HITs."""

    key = models.CharField(max_length=16, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"installation {self.key}"


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    source_file = models.CharField(max_length=500)
    checksum = models.CharField(max_length=64, help_text="sha256 of the imported file")
    image_source = models.CharField(max_length=20, choices=ImageSource.choices)
    image_location = models.CharField(max_length=500, blank=True)
    info = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Image(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="images")
    coco_id = models.BigIntegerField()
    file_name = models.CharField(max_length=300)
    coco_url = models.CharField(max_length=500, blank=True)
    width = models.IntegerField(null=True, blank=True)
    height = models.IntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "coco_id"], name="image_unique_coco_id")
        ]

    def __str__(self) -> str:
        return f"image {self.coco_id}"


class Caption(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="captions")
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="captions")
    coco_id = models.BigIntegerField()
    text = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "coco_id"], name="caption_unique_coco_id")
        ]

    def __str__(self) -> str:
        return f"caption {self.coco_id}"


class RunKind(models.TextChoices):
    BISON = "bison", "COCO-BISON"
    ECCV = "eccv", "ECCV Caption"
    CXC = "cxc", "Crisscrossed Captions"
    QUALITY = "caption_quality", "Caption-quality judgments"


class RunStatus(models.TextChoices):
    """Where a run stands, in words no flow owns; each flow names them for its pages
    (`Flow.status_words`: BISON's "pairing", "selecting", "verifying")."""

    CREATED = "created"
    # The flow's machine step: BISON's pairing, ECCV's proposals, CxC's sampling.
    PREPARING = "preparing", "Preparing: the flow's machine step runs"
    PREPARED = "prepared", "Prepared: items ready for the crowd"
    # The first (or only) crowd stage, then a second one that works on the first one's
    # output (BISON's verification). "...ed": every batch of the stage has ended (completed
    # or expired); back to "...ing" when a batch is on offer again (`run_status_follow`).
    COLLECTING = "collecting", "Collecting: a batch is on offer"
    COLLECTED = "collected", "Collected: no batch on offer"
    COLLECTING_2 = "collecting_2", "Collecting, second crowd stage: a batch is on offer"
    COLLECTED_2 = "collected_2", "Collected, second crowd stage: no batch on offer"
    EXPORTED = "exported"
    FAILED = "failed"


class Project(models.Model):
    """A group of runs with its own members; a user acts on a run through its project's role
    (see annotation/permissions.py). Runs made without one go to the "Default" project."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class ProjectRole(models.TextChoices):
    RESEARCHER = "researcher", "Researcher: everything in the project"
    REVIEWER = "reviewer", "Reviewer: review queue and worker pages"
    VIEWER = "viewer", "Viewer: read-only"


class ProjectMembership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    role = models.CharField(max_length=20, choices=ProjectRole.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="project_membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"


def default_project_id() -> int:
    """Kept for migration 0015, which named it as Run.project's default. A model default
    writes nothing now: `run_create` puts a run without a project in the Default project."""
    from annotation.services.runs.projects import project_default

    return project_default().pk


class Run(models.Model):
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="runs")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="runs")
    kind = models.CharField(max_length=20, choices=RunKind.choices)
    name = models.CharField(max_length=200, blank=True)
    config = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.CREATED)
    embedding_dim = models.IntegerField(null=True, blank=True)
    embedding_source = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="who created it from a page or the API: mailed when a batch completes or a "
        "job fails",
    )

    def __str__(self) -> str:
        return f"{self.kind} run {self.pk}"

    def get_status_display(self) -> str:  # type: ignore[no-redef]  # replaces the choices one: the flow's words
        """The status in its flow's words (BISON: "paired", "selecting"), else the core's."""
        from annotation.flow_registry import run_status_word

        return run_status_word(kind=self.kind, status=self.status)


class GoldItemKind(models.TextChoices):
    """Item kinds whose answer is known before the worker gives it: the flow-neutral shapes of
    gold the core's gold and claim rules read (a flow's other item kinds are its own,
    `Flow.item_kinds`). A gold item with a `source` is a copy of a real item whose answer this
    run established (shown exactly as the real item is); without one it comes from elsewhere
    (a paper's procedure: original pairs, published ratings)."""

    POSITIVE = "gold_positive", "Gold: the answer is yes (the caption fits)"
    NEGATIVE = "gold_negative", "Gold: the answer is no (the caption does not fit)"
    RATING = "gold_rating", "Gold: an item with a known rating"
    PREFERENCE = "gold_preference", "Gold: two captions, one known to be preferred"
    # One of a task's several answers; `target` is its place in the task's choices (BISON
    # stage 3's traps: an answer the public COCO source gets wrong, issue 47).
    CHOICE = "gold_choice", "Gold: one of several answers is known"


GOLD_KINDS = tuple(GoldItemKind)


class Item(models.Model):
    """What a question is about. BISON: image pairs from stage 1, triples from stage 2; ECCV:
    image-caption candidates; CxC: pairs to rate (`positive`/`negative` images,
    `caption`/`caption2` captions, by modality). `kind` is one of the flows' item kinds or a
    `GoldItemKind`; its label comes from the registry (`flow_registry.item_kind_label`)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="items")
    kind = models.CharField(max_length=20)
    positive = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    negative = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+", null=True)
    caption = models.ForeignKey(Caption, on_delete=models.PROTECT, related_name="+", null=True)
    source = models.ForeignKey(
        "self", on_delete=models.CASCADE, related_name="derived", null=True, blank=True
    )
    similarity = models.FloatField(null=True, blank=True)
    # CxC: the second caption of a caption pair, how the pair was chosen (its sampling
    # method), and for a gold item the known rating (a preference: 1 = the first caption).
    caption2 = models.ForeignKey(
        Caption, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    tag = models.CharField(max_length=40, blank=True)
    target = models.FloatField(null=True, blank=True)
    # Caption-quality judgments: the candidate caption(s) judged for `positive`. The table
    # is the quality flow's (`annotation/flows/quality/models.py`); named by app label only,
    # so the core imports no flow code. Kept as columns of the core's one question table
    # because gold copies, the worker's page and the data browser read every item's shown
    # fields in one row (issue 26: moving them out would cost a join on the worker path).
    candidate = models.ForeignKey(
        "quality.Candidate", on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    candidate2 = models.ForeignKey(
        "quality.Candidate", on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "positive", "negative"],
                condition=Q(kind="image_pair"),
                name="item_one_pair_per_ordered_images",
            ),
            models.UniqueConstraint(
                fields=["run", "source", "caption"],
                condition=Q(kind="triple"),
                name="item_one_triple_per_pair_caption",
            ),
            models.UniqueConstraint(
                fields=["run", "positive", "caption"],
                condition=Q(kind="candidate"),
                name="item_one_candidate_per_pair",
            ),
            # One gold copy of a real item per kind, reused by every batch that shows it, so
            # a worker never meets one copy under two ids (the claim keeps them apart).
            models.UniqueConstraint(
                fields=["run", "source", "kind"],
                condition=Q(kind__in=[k.value for k in GOLD_KINDS], source__isnull=False),
                name="item_one_gold_copy_per_source",
            ),
        ]
        indexes = [models.Index(fields=["run", "kind"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.pk}"


class JobState(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Job(models.Model):
    """A background job's record: what the CLI, the API and the admin read progress from."""

    name = models.CharField(max_length=100)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="jobs", null=True)
    params = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=20, choices=JobState.choices, default=JobState.PENDING)
    progress = models.FloatField(default=0.0, help_text="percent")
    message = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    parts_total = models.IntegerField(default=0)
    parts_done = models.JSONField(default=list, blank=True)
    # When the prepare, each part and the finish ran, and on which worker process
    # (annotation/services/jobs/job_timing.py); read by the scale-out model (pipeline/scaleout.py).
    timings = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Written every few seconds by the process running one of the job's steps; a pending or
    # running job whose last sign of life is old has lost its worker or its messages.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    resumed = models.IntegerField(default=0, help_text="times recovery re-sent its steps")

    def __str__(self) -> str:
        return f"job {self.pk} {self.name} ({self.state})"


class BatchStatus(models.TextChoices):
    DRAFT = "draft"
    PUBLISHED = "published"
    PAUSED = "paused"  # no new claims; work in progress may finish
    COMPLETED = "completed"
    EXPIRED = "expired"


def default_qualifications() -> dict:
    return {
        "min_approved_hits": 500,
        "min_approval_percent": 97,
        "locales": ["US", "GB", "CA", "AU", "NZ", "IE"],
    }


class Batch(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="batches")
    stage = models.CharField(max_length=40)
    provider = models.CharField(max_length=20)
    status = models.CharField(max_length=20, choices=BatchStatus.choices, default=BatchStatus.DRAFT)
    title = models.CharField(max_length=200)
    items_per_hit = models.PositiveIntegerField(default=10)
    assignments_per_hit = models.PositiveIntegerField(default=1)
    reward = models.DecimalField(max_digits=8, decimal_places=2, default=Decimal("0.10"))
    lifetime_seconds = models.PositiveIntegerField(default=7 * 24 * 3600)
    assignment_duration_seconds = models.PositiveIntegerField(default=3600)
    qualifications = models.JSONField(default=default_qualifications)
    seed = models.IntegerField(default=0)
    options = models.JSONField(default=dict, blank=True, help_text="task options, e.g. follow_ups")
    description = models.TextField(blank=True)
    keywords = models.CharField(max_length=500, blank=True)
    auto_approval_delay_seconds = models.PositiveIntegerField(default=3 * 24 * 3600)
    provider_hit_type_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, blank=True)
    environment = models.CharField(
        max_length=20, blank=True, help_text="MTurk: sandbox or production, fixed at publishing"
    )
    sync_error = models.TextField(blank=True, help_text="the last synchronisation's failure")
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return f"batch {self.pk} ({self.stage})"

    def get_stage_display(self) -> str:
        """The stage's name, as its flow registered it (`flow_registry.stage_label`)."""
        from annotation.flow_registry import stage_label

        return stage_label(self.stage)

    def past_lifetime(self, now: datetime) -> bool:
        """Whether the batch's lifetime since publishing is over (no claims, no submissions)."""
        if self.published_at is None:
            return False
        return self.published_at + timedelta(seconds=self.lifetime_seconds) < now


class HitStatus(models.TextChoices):
    OPEN = "open"
    COMPLETE = "complete"
    EXPIRED = "expired"
    UNKNOWN = "unknown", "Unknown to the provider"


class Hit(models.Model):
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="hits")
    position = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=HitStatus.choices, default=HitStatus.OPEN)
    provider_hit_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, blank=True)
    extra_assignments = models.PositiveIntegerField(
        default=0, help_text="assignments added after publishing"
    )
    create_attempted_at = models.DateTimeField(
        null=True, blank=True, help_text="when creating it at the provider was first tried"
    )
    max_assignments = models.PositiveIntegerField(
        null=True, blank=True, help_text="a re-offered HIT: how many workers it still needs"
    )
    cannot_grow_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when the provider refused another assignment: its items must be re-offered",
    )
    reoffered_as = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reoffer_of"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="hit_unique_position")
        ]

    def __str__(self) -> str:
        return f"HIT {self.pk}"

    @property
    def capacity(self) -> int:
        base = (
            self.batch.assignments_per_hit if self.max_assignments is None else self.max_assignments
        )
        return base + self.extra_assignments


class BatchImage(models.Model):
    """How a batch's pages name an image: a random token, never its pk, file name or source
    URL, and different in every batch."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="images")
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="+")
    token = models.CharField(max_length=43, unique=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "image"], name="batch_image_once")]

    def __str__(self) -> str:
        return f"image of batch {self.batch_id}"


class HitImage(models.Model):
    """An image a HIT's questions show, for stages whose HITs are image-disjoint
    (`TaskType.images_disjoint`): the claim gives nobody a HIT showing an image they had in
    another HIT (`image_seen_before`), so no worker sees one image in two questions."""

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="shown_images")
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hit", "image"], name="hit_image_once")]

    def __str__(self) -> str:
        return f"image of HIT {self.hit_id}"


class Question(models.Model):
    """One item inside a HIT. Server side only: `swapped` says which side the positive is on."""

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="questions")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="questions")
    position = models.PositiveIntegerField()
    swapped = models.BooleanField(
        default=False, help_text="verification: the positive is shown on the right"
    )

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["hit", "position"], name="question_unique_position")
        ]

    def __str__(self) -> str:
        return f"question {self.position + 1} of HIT {self.hit_id}"


class Worker(models.Model):
    provider = models.CharField(max_length=20)
    external_id = models.CharField(max_length=EXTERNAL_ID_LENGTH)
    blocked = models.BooleanField(default=False)
    block_scope = models.CharField(
        max_length=20,
        blank=True,
        help_text="account: the provider's own block; project: this installation's HITs only",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="worker_unique_id")
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.external_id}"


class Invitation(models.Model):
    """A local worker's way in: a random link staff hand to one person, revocable. The worker
    is whoever holds the link, never whoever types an id."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="invitations")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="invitations")
    label = models.CharField(max_length=200, help_text="as staff entered it (email or id)")
    token = models.CharField(max_length=43, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    consent_version = models.CharField(max_length=20, blank=True)
    consented_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "worker"], name="invitation_once_per_worker")
        ]

    def __str__(self) -> str:
        return f"invitation of {self.label} to run {self.run_id}"


class Consent(models.Model):
    """A worker accepted a version of a run's information and consent text, whatever their
    provider (written by `services/consent.consent_record` from each provider's consent page).
    One row per version accepted: the record of who agreed to what, and when; which version is
    current for a worker's way in stays with that way (an invitation, a panel participant)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="consents")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="consents")
    version = models.CharField(max_length=20)
    accepted_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "worker", "version"], name="consent_once_per_version"
            )
        ]

    def __str__(self) -> str:
        return f"worker {self.worker_id} accepted {self.version} of run {self.run_id}"


class PoolMembership(models.Model):
    """A worker belongs to at most one stage's pool within a run: the pools stay disjoint."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="pool_memberships")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="pool_memberships")
    stage = models.CharField(max_length=40)
    created_at = models.DateTimeField(auto_now_add=True)
    granted_at = models.DateTimeField(
        null=True, blank=True, help_text="when the provider's pool qualification was granted"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "worker"], name="pool_one_stage_per_run")
        ]

    def __str__(self) -> str:
        return f"worker {self.worker_id} in {self.stage} of run {self.run_id}"

    def get_stage_display(self) -> str:
        """The stage's name, as its flow registered it (`flow_registry.stage_label`)."""
        from annotation.flow_registry import stage_label

        return stage_label(self.stage)


class AssignmentState(models.TextChoices):
    ACCEPTED = "accepted"
    SUBMITTED = "submitted"
    APPROVED = "approved"
    REJECTED = "rejected"
    ABANDONED = "abandoned"


class Assignment(models.Model):
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="assignments")
    state = models.CharField(
        max_length=20, choices=AssignmentState.choices, default=AssignmentState.ACCEPTED
    )
    provider_assignment_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, blank=True)
    accepted_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="the worker's first answer on the page (a browser's claim, kept between "
        "accepting and submitting): the start of active time for pay",
    )
    auto_approve_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="MTurk's AutoApprovalTime: it pays the work then unless someone decided",
    )
    confirmed = models.BooleanField(
        default=True,
        help_text="the provider has seen this assignment (MTurk: found by synchronisation); "
        "unconfirmed work never counts",
    )
    excluded = models.BooleanField(
        default=False,
        help_text="confirmed but not counted: the worker also did an earlier stage of the run",
    )
    consent_version = models.CharField(
        max_length=20,
        blank=True,
        # In the database too: bulk SQL inserts (the export benchmarks) name no consent.
        default="",
        db_default="",
        help_text="the version of the run's information and consent text the worker had "
        "accepted when they claimed it, kept when the text changes mid-task (empty: a way in "
        "with no consent page, or claimed before it was recorded)",
    )

    class Meta:
        # Unconfirmed rows are claims from a browser: they must never block the real ones.
        constraints = [
            models.UniqueConstraint(
                fields=["hit", "worker"],
                condition=Q(confirmed=True),
                name="assignment_once_per_worker",
            ),
            models.UniqueConstraint(
                fields=["provider_assignment_id"],
                condition=~Q(provider_assignment_id="") & Q(confirmed=True),
                name="assignment_unique_provider_id",
            ),
            models.UniqueConstraint(
                fields=["provider_assignment_id", "hit", "worker"],
                condition=Q(confirmed=False),
                name="assignment_unconfirmed_once",
            ),
        ]
        indexes = [models.Index(fields=["hit", "state"])]

    def __str__(self) -> str:
        return f"assignment {self.pk}"


class AssignmentDraft(models.Model):
    """A worker's answers in progress on their open assignment, saved from the task page as
    they are given (issue 46), so a closed browser, a reload, another device or an expired
    session loses nothing. Never counted: no counting, agreement, export or gold code reads
    this table, and the submit removes the row in its own transaction. `answers` holds the
    form's values as the page had them (`{"q0": ["c2"], "q1_reason": [...], ...}`): a
    browser's claim, checked for its keys and sizes only (`services/drafts.draft_save`)."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="draft")
    answers = models.JSONField(default=dict)
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"draft of assignment {self.assignment_id}"


class BlockQualification(models.Model):
    """The provider-side mark of workers blocked from this installation's HITs only (a project
    block, instead of a block on the whole requester account), one per environment."""

    provider = models.CharField(max_length=20)
    environment = models.CharField(max_length=ENVIRONMENT_LENGTH)
    qualification_id = models.CharField(max_length=EXTERNAL_ID_LENGTH)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "environment"], name="block_qualification_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.environment} project block {self.qualification_id}"


class PoolQualification(models.Model):
    """A provider-side qualification marking the workers of one stage's pool in a run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="pool_qualifications")
    stage = models.CharField(max_length=40)
    provider = models.CharField(max_length=20)
    environment = models.CharField(max_length=ENVIRONMENT_LENGTH, blank=True)
    qualification_id = models.CharField(max_length=EXTERNAL_ID_LENGTH)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "stage", "provider", "environment"],
                name="pool_qualification_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider} qualification {self.qualification_id} ({self.stage})"

    def get_stage_display(self) -> str:
        """The stage's name, as its flow registered it (`flow_registry.stage_label`)."""
        from annotation.flow_registry import stage_label

        return stage_label(self.stage)


class BonusKind(models.TextChoices):
    BONUS = "bonus", "bonus"
    # A top-up the platform asks for when the median time shows the reward under its minimum
    # hourly rate (Prolific's adjustment payment).
    PAY_ADJUSTMENT = "pay_adjustment", "pay adjustment"


class Bonus(models.Model):
    """A bonus payment; `token` makes sending it idempotent at the provider too."""

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="bonuses")
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    reason = models.TextField()
    kind = models.CharField(max_length=20, choices=BonusKind.choices, default=BonusKind.BONUS)
    token = models.CharField(max_length=64, unique=True)
    attempted_at = models.DateTimeField(null=True, blank=True, help_text="first sending attempt")
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"bonus ${self.amount} for assignment {self.assignment_id}"


class ReviewStatus(models.TextChoices):
    OPEN = "open"
    APPROVED = "approved"
    REJECTED = "rejected"
    AUTO_APPROVED = "auto_approved", "Paid by the provider's auto-approval before a decision"


class Review(models.Model):
    """Submitted work held for a person to decide, e.g. because it failed gold questions."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="review")
    reasons = models.JSONField(default=list)
    status = models.CharField(
        max_length=20, choices=ReviewStatus.choices, default=ReviewStatus.OPEN
    )
    feedback = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"review of assignment {self.assignment_id} ({self.status})"


class Answer(models.Model):
    """One answer to one question. `label` is the server's reading of the worker's choice:
    selection: a caption id or "none"; verification: positive/negative/both/neither."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="answers")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="answers")
    choice = models.CharField(max_length=40, help_text="what the worker clicked")
    label = models.CharField(max_length=40)
    caption = models.ForeignKey(Caption, on_delete=models.PROTECT, null=True, related_name="+")
    details = models.JSONField(default=dict, blank=True, help_text="rationale follow-ups")
    raw = models.TextField(blank=True, help_text="the submitted value, as sent")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "question"], name="answer_once_per_question"
            )
        ]
        indexes = [models.Index(fields=["question", "label"])]

    def __str__(self) -> str:
        return f"answer {self.label} to question {self.question_id}"


class RemoteCallState(models.TextChoices):
    REQUESTED = "requested", "requested"  # recorded, about to be sent (or sent, no answer yet)
    DONE = "done", "done"  # the platform answered; remote_id holds what it made
    UNCLEAR = "unclear", "unclear"  # no answer: it may have taken effect; look it up first


class RemoteCall(models.Model):
    """A call with an effect at a provider (a study, a group, a bonus, a payment, a message),
    recorded before it is sent: `key` names the one effect it stands for, so a second attempt
    finds the first and looks the object up instead of calling again."""

    provider = models.CharField(max_length=20)
    operation = models.CharField(max_length=40)
    key = models.CharField(max_length=200, unique=True)
    state = models.CharField(
        max_length=20, choices=RemoteCallState.choices, default=RemoteCallState.REQUESTED
    )
    remote_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # Set while one request looks it up or sends it: a second (a double click) is refused.
    sending_at = models.DateTimeField(null=True, blank=True)
    data = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.provider} {self.operation} {self.key} ({self.state})"


class EventAction(models.TextChoices):
    """What an `Event` row records: one member per named state change (the stored value is the
    string, also its label). The log is history only; nothing reads it back to decide."""

    ACCOUNT_CREATED = "account.created", "account.created"
    ASSIGNMENT_ABANDONED = "assignment.abandoned", "assignment.abandoned"
    ASSIGNMENT_ACCEPTED = "assignment.accepted", "assignment.accepted"
    ASSIGNMENT_APPROVED = "assignment.approved", "assignment.approved"
    ASSIGNMENT_CONFIRMED = "assignment.confirmed", "assignment.confirmed"
    ASSIGNMENT_EXCLUDED = "assignment.excluded", "assignment.excluded"
    ASSIGNMENT_REJECTED = "assignment.rejected", "assignment.rejected"
    ASSIGNMENT_SUBMITTED = "assignment.submitted", "assignment.submitted"
    BATCH_COMPLETED = "batch.completed", "batch.completed"
    BATCH_CREATED = "batch.created", "batch.created"
    BATCH_DISCARDED = "batch.discarded", "batch.discarded"
    BATCH_EXPIRED = "batch.expired", "batch.expired"
    BATCH_EXTENDED = "batch.extended", "batch.extended"
    BATCH_PAUSED = "batch.paused", "batch.paused"
    BATCH_PUBLISHED = "batch.published", "batch.published"
    BATCH_RESUMED = "batch.resumed", "batch.resumed"
    BATCHES_STOPPED = "batches.stopped", "batches.stopped"
    BISON_TRIPLES_CREATED = "bison.triples_created", "bison.triples_created"
    CONSENT_RECORDED = "consent.recorded", "consent.recorded"
    CXC_GOLD_IMPORTED = "cxc.gold_imported", "cxc.gold_imported"
    CXC_INTERMODAL_CREATED = "cxc.intermodal_created", "cxc.intermodal_created"
    DATASET_IMAGE_SOURCE_CHANGED = "dataset.image_source_changed", "dataset.image_source_changed"
    DATASET_IMPORT_REQUESTED = "dataset.import_requested", "dataset.import_requested"
    DATASET_IMPORTED = "dataset.imported", "dataset.imported"
    ECCV_ANNOTATOR_ADDED = "eccv.annotator_added", "eccv.annotator_added"
    ECCV_CXC_IMPORTED = "eccv.cxc_imported", "eccv.cxc_imported"
    ENCODERS_DELETED = "encoders.deleted", "encoders.deleted"
    ENCODERS_STARTED = "encoders.started", "encoders.started"
    HIT_ASSIGNMENTS_ADDED = "hit.assignments_added", "hit.assignments_added"
    HIT_CANNOT_GROW = "hit.cannot_grow", "hit.cannot_grow"
    HIT_REOFFERED = "hit.reoffered", "hit.reoffered"
    IMAGES_CACHED = "images.cached", "images.cached"
    INSTALLATION_REGENERATED = "installation.regenerated", "installation.regenerated"
    INVITATION_CONSENTED = "invitation.consented", "invitation.consented"
    INVITATION_REVOKED = "invitation.revoked", "invitation.revoked"
    INVITATIONS_CREATED = "invitations.created", "invitations.created"
    JOB_CANCELLED = "job.cancelled", "job.cancelled"
    JOB_RESUMED = "job.resumed", "job.resumed"
    LOGIN_LOCKED = "login.locked", "login.locked"
    LOGIN_SLOWED = "login.slowed", "login.slowed"
    LOGIN_UNLOCKED = "login.unlocked", "login.unlocked"
    MTURK_ANSWERS_REFUSED = "mturk.answers_refused", "mturk.answers_refused"
    MTURK_ASSIGNMENT_REFUSED = "mturk.assignment_refused", "mturk.assignment_refused"
    MTURK_HIT_UNKNOWN = "mturk.hit_unknown", "mturk.hit_unknown"
    MTURK_HITS_CREATED = "mturk.hits_created", "mturk.hits_created"
    MTURK_POOL_QUALIFICATION_CREATED = (
        "mturk.pool_qualification_created",
        "mturk.pool_qualification_created",
    )
    MTURK_PUBLISH_REQUESTED = "mturk.publish_requested", "mturk.publish_requested"
    MTURK_SYNC_FAILED = "mturk.sync_failed", "mturk.sync_failed"
    MTURK_SYNCED = "mturk.synced", "mturk.synced"
    OWNER_NOTIFIED = "owner.notified", "owner.notified"
    PANEL_CONFIRMED = "panel.confirmed", "panel.confirmed"
    PANEL_CONSENTED = "panel.consented", "panel.consented"
    PANEL_FINISHED = "panel.finished", "panel.finished"
    PANEL_SETTINGS_CHANGED = "panel.settings_changed", "panel.settings_changed"
    POOL_JOINED = "pool.joined", "pool.joined"
    PROJECT_CREATED = "project.created", "project.created"
    PROJECT_MEMBER_REMOVED = "project.member_removed", "project.member_removed"
    PROJECT_MEMBER_SET = "project.member_set", "project.member_set"
    PROLIFIC_BONUS_CREATED = "prolific.bonus_created", "prolific.bonus_created"
    PROLIFIC_BONUS_PAY_REQUESTED = "prolific.bonus_pay_requested", "prolific.bonus_pay_requested"
    PROLIFIC_HIGH_RETURN_RATE = "prolific.high_return_rate", "prolific.high_return_rate"
    PROLIFIC_HOOK = "prolific.hook", "prolific.hook"
    PROLIFIC_PAY_ADJUSTED = "prolific.pay_adjusted", "prolific.pay_adjusted"
    PROLIFIC_POOL_GROUP_CREATED = "prolific.pool_group_created", "prolific.pool_group_created"
    PROLIFIC_PUBLISH_REQUESTED = "prolific.publish_requested", "prolific.publish_requested"
    PROLIFIC_STATUS_UNKNOWN = "prolific.status_unknown", "prolific.status_unknown"
    PROLIFIC_STUDY_CREATE_REQUESTED = (
        "prolific.study_create_requested",
        "prolific.study_create_requested",
    )
    PROLIFIC_STUDY_PUBLISHED = "prolific.study_published", "prolific.study_published"
    PROLIFIC_SYNC_FAILED = "prolific.sync_failed", "prolific.sync_failed"
    PROLIFIC_SYNCED = "prolific.synced", "prolific.synced"
    PROLIFIC_TEST_STUDY_CREATED = "prolific.test_study_created", "prolific.test_study_created"
    PROLIFIC_WORK_REFUSED = "prolific.work_refused", "prolific.work_refused"
    PUBLICATION_FAILED = "publication.failed", "publication.failed"
    PUBLICATION_PUBLISHED = "publication.published", "publication.published"
    PUBLICATION_RESUMED = "publication.resumed", "publication.resumed"
    PUBLICATION_STARTED = "publication.started", "publication.started"
    QUALITY_CANDIDATES_IMPORTED = "quality.candidates_imported", "quality.candidates_imported"
    QUALITY_ITEMS_CREATED = "quality.items_created", "quality.items_created"
    REVIEW_AUTO_APPROVED = "review.auto_approved", "review.auto_approved"
    REVIEW_DECIDED = "review.decided", "review.decided"
    REVIEW_OPENED = "review.opened", "review.opened"
    RUN_CONSENT_CHANGED = "run.consent_changed", "run.consent_changed"
    RUN_CREATED = "run.created", "run.created"
    RUN_INSTRUCTIONS_CHANGED = "run.instructions_changed", "run.instructions_changed"
    RUN_STATUS = "run.status", "run.status"
    WORKER_BLOCKED = "worker.blocked", "worker.blocked"
    WORKER_BONUS_SENT = "worker.bonus_sent", "worker.bonus_sent"
    WORKER_NOTIFIED = "worker.notified", "worker.notified"
    WORKER_UNBLOCKED = "worker.unblocked", "worker.unblocked"


ASSIGNMENT_STATE_ACTIONS = {
    AssignmentState.ACCEPTED: EventAction.ASSIGNMENT_ACCEPTED,
    AssignmentState.SUBMITTED: EventAction.ASSIGNMENT_SUBMITTED,
    AssignmentState.APPROVED: EventAction.ASSIGNMENT_APPROVED,
    AssignmentState.REJECTED: EventAction.ASSIGNMENT_REJECTED,
    AssignmentState.ABANDONED: EventAction.ASSIGNMENT_ABANDONED,
}


class Event(models.Model):
    """An audit row written by every named state change."""

    action = models.CharField(max_length=60, choices=EventAction.choices)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, null=True, related_name="events")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, null=True, related_name="events")
    assignment = models.ForeignKey(
        Assignment, on_delete=models.CASCADE, null=True, related_name="events"
    )
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, null=True, related_name="events")
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.action} at {self.created_at:%Y-%m-%d %H:%M:%S}"


# State that decisions read (the daily cap, once-only records, the run page's counts): in its own
# rows, each written beside its event; the event log is history only.


class InstructionsChange(models.Model):
    """A run's instructions for one stage changed from one version to another (a version: the
    first 12 hex digits of the text's sha256, or "default"): a release gives each judgment the
    version in force when its worker took the HIT from these rows."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    stage = models.CharField(max_length=40)
    from_version = models.CharField(max_length=12)
    to_version = models.CharField(max_length=12)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["run", "created_at"], name="instructions_change_run")]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.stage}: {self.from_version} -> {self.to_version}"


class SlotsAdded(models.Model):
    """Paid slots added to a HIT after it was offered: by a person (`extra_total`, the HIT's
    new extra total, which its provider token is made from) or by a provider in place of
    rejected work (`redo`, the rejected assignment). The daily cap counts them."""

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="+")
    added = models.PositiveIntegerField()
    extra_total = models.PositiveIntegerField(null=True, blank=True)
    redo = models.OneToOneField(
        Assignment, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["hit", "extra_total"], name="slots_added_once")
        ]

    def __str__(self) -> str:
        return f"{self.added} slots added to HIT {self.hit_id}"


class RejectionFeedback(models.Model):
    """The message of an assignment's latest rejection: a provider still showing the work as
    submitted is told again with it (MTurk's synchronisation)."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="+")
    feedback = models.TextField(blank=True)
    rejected_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"rejection of assignment {self.assignment_id}"


class WorkerNoticeState(models.TextChoices):
    REQUESTED = "requested", "requested"  # recorded before the provider is asked to send it
    SENT = "sent", "sent"
    UNCLEAR = "unclear", "unclear"  # no clear answer: it may have arrived; never sent again here


class WorkerNotice(models.Model):
    """One message (`token`: this installation's digest of its subject and text) to one
    worker, recorded before it is sent: the same message is never sent to them twice."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="+")
    token = models.CharField(max_length=64)
    subject = models.TextField()
    state = models.CharField(
        max_length=20, choices=WorkerNoticeState.choices, default=WorkerNoticeState.REQUESTED
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["worker", "token"], name="worker_notice_once")
        ]

    def __str__(self) -> str:
        return f"notice {self.token[:16]} to worker {self.worker_id} ({self.state})"


class RefusedAnswers(models.Model):
    """Answers a provider holds that could not be stored here, once per remote assignment:
    still submitted there, they are paid unless someone rejects them (the dashboard counts
    them per batch)."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="+")
    remote_assignment_id = models.CharField(max_length=EXTERNAL_ID_LENGTH)
    remote_worker_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, blank=True)
    remote_hit_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, blank=True)
    status = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "remote_assignment_id"], name="refused_answers_once"
            )
        ]

    def __str__(self) -> str:
        return f"refused answers of {self.remote_assignment_id} in batch {self.batch_id}"


class Export(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="exports")
    format = models.CharField(max_length=40)
    version = models.PositiveIntegerField()
    path = models.CharField(max_length=500)
    checksum = models.CharField(max_length=64)
    manifest = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "format", "version"], name="export_version")
        ]

    def __str__(self) -> str:
        return f"{self.format} v{self.version} of run {self.run_id}"


class PublicationStatus(models.TextChoices):
    STARTED = "started", "started"  # recorded before any call; files may be on their way
    PUBLISHED = "published", "published"  # every file there with its checksum, made public
    FAILED = "failed", "failed"  # stopped (the error says why); the next run resumes it


class Publication(models.Model):
    """An export version sent to a public archive (annotation/publish/), recorded before the
    first call: the next attempt finds this row and resumes (files already there with the
    same checksum are skipped; the draft is looked up, never made twice)."""

    export = models.ForeignKey(Export, on_delete=models.CASCADE, related_name="publications")
    destination = models.CharField(max_length=20)  # huggingface | zenodo
    target = models.CharField(max_length=200)  # the Hub's repo id; Zenodo: its base URL
    endpoint = models.CharField(max_length=200)
    status = models.CharField(
        max_length=20, choices=PublicationStatus.choices, default=PublicationStatus.STARTED
    )
    # Written into what the archive makes (Zenodo's notes), so a lost answer can be looked up.
    reference = models.CharField(max_length=40)
    remote_id = models.CharField(max_length=EXTERNAL_ID_LENGTH, blank=True)
    remote_url = models.CharField(max_length=500, blank=True)
    files_done = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["export", "destination", "target"], name="publication_once"
            )
        ]

    def __str__(self) -> str:
        return f"export {self.export_id} to {self.destination} {self.target} ({self.status})"


class LoginScope(models.TextChoices):
    ACCOUNT = "account", "account"
    ADDRESS = "address", "client address"
    PAIR = "pair", "account from one client address"


class LoginThrottle(models.Model):
    """Failed sign-ins counted per account (username), client address, and account from one
    address (`pair`, key "<account>|<address>"): in the database, so every server process
    counts the same failures (services/access/logins.py). An account's `locked_until` slows it (a
    wait for addresses that failed on it); a pair's or an address's locks it."""

    scope = models.CharField(max_length=10, choices=LoginScope.choices)
    key = models.CharField(max_length=150)
    failures = models.PositiveIntegerField(default=0)
    window_start = models.DateTimeField()
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "key"], name="login_throttle_key")]

    def __str__(self) -> str:
        return f"{self.scope} {self.key}: {self.failures} failures"
