from typing import Any

from django.core.management.base import CommandParser

from annotation.management.base import ServiceCommand
from annotation.models import Project
from annotation.services.runs.projects import project_create, project_default


class Command(ServiceCommand):
    help = (
        "Projects: `create <name> [--description TEXT]`, `list`. Members: see project_member; "
        "runs made without a project go to the Default project."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="what", required=True)
        create = sub.add_parser("create", help="create a project")
        create.add_argument("name")
        create.add_argument("--description", default="")
        sub.add_parser("list", help="list projects with their run and member counts")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["what"] == "create":
            project = project_create(name=opts["name"], description=opts["description"])
            self.stdout.write(f"created project {project.name} (id {project.pk})")
            return
        project_default()  # listed from the first command on
        for p in Project.objects.order_by("name"):
            runs, members = p.runs.count(), p.memberships.count()
            self.stdout.write(f"{p.name}\t{runs} run(s)\t{members} member(s)")
