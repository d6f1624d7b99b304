"""Task types: what a question looks like to a worker and how an answer is read.

One class per stage kind; `task_type_for(stage)` finds it. A new dataset flow adds a
class here and registers it in REGISTRY.
"""

from annotation.tasktypes.base import ParsedAnswer, TaskType
from annotation.tasktypes.bison import SelectionTask, VerificationTask
from annotation.tasktypes.eccv import EccvJudgmentTask

REGISTRY: dict[str, TaskType] = {
    t.stage: t for t in (SelectionTask(), VerificationTask(), EccvJudgmentTask())
}


def task_type_for(stage: str) -> TaskType:
    try:
        return REGISTRY[stage]
    except KeyError:
        raise KeyError(f"no task type for stage {stage!r}") from None


__all__ = ["ParsedAnswer", "TaskType", "task_type_for"]
