"""Task types: what a question looks like to a worker and how an answer is read.

One class per stage kind, defined in its flow's folder (`annotation/flows/<flow>/tasktypes.py`)
and registered with the flow; `task_type_for(stage)` finds it.
"""

from annotation.flow_registry import task_type_for
from annotation.tasktypes.base import ParsedAnswer, TaskType

__all__ = ["ParsedAnswer", "TaskType", "task_type_for"]
