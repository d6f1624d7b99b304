from typing import Any

from django.core.management.base import CommandParser

from annotation.management.base import ServiceCommand
from annotation.models import ProjectMembership, ProjectRole
from annotation.services.runs.projects import (
    project_member_create,
    project_member_remove,
    project_member_set,
)


class Command(ServiceCommand):
    help = (
        "Project members: `add <project> <username> <role>` (or change the role), "
        "`remove <project> <username>`, `list [<project>]`. Roles: " + ", ".join(ProjectRole.values)
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="what", required=True)
        add = sub.add_parser("add", help="add a user to a project, or change their role")
        add.add_argument("project")
        add.add_argument("username")
        add.add_argument("role", choices=ProjectRole.values)
        add.add_argument(
            "--create-account",
            action="store_true",
            help="make the user's sign-in account first (its random password is printed once)",
        )
        remove = sub.add_parser("remove", help="remove a user from a project")
        remove.add_argument("project")
        remove.add_argument("username")
        listing = sub.add_parser("list", help="list members (of one project, or all)")
        listing.add_argument("project", nargs="?")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["what"] == "add":
            who = {"project": opts["project"], "username": opts["username"], "role": opts["role"]}
            if opts["create_account"]:
                m, password = project_member_create(**who)
                self.stdout.write(f"created user {m.user} with password {password} (shown once)")
            else:
                m = project_member_set(**who)
            self.stdout.write(f"{m.user} is {m.role} of {m.project}")
        elif opts["what"] == "remove":
            removed = project_member_remove(project=opts["project"], username=opts["username"])
            state = "removed from" if removed else "was not a member of"
            self.stdout.write(f"{opts['username']} {state} {opts['project']}")
        else:
            members = ProjectMembership.objects.select_related("project", "user").order_by(
                "project__name", "user__username"
            )
            if opts["project"]:
                members = members.filter(project__name=opts["project"])
            for m in members:
                self.stdout.write(f"{m.project.name}\t{m.user}\t{m.role}")
