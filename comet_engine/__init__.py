"""comet_engine: a durable workflow runtime for skill workflows.

One core (a run state machine over a step graph, persisted through a compare-and-swap store) and two
front ends (skill packages with ``comet skill``, and a Python workflow API). The engine never performs
side effects: it proposes actions, constrains them with guardrails, records outcomes and evaluates
checks. It imports nothing else of this repository (DESIGN.md: pytest_comet -> scaffold -> comet_engine).

The Python workflow API in five lines::

    from comet_engine import Runtime, define_workflow, skill, approval, tool
    from comet_engine.stores.memory import MemoryStore

    wf = define_workflow("report", "1", entry="draft",
                         steps={"draft": skill("draft"), "approve": approval(proposal_from="draft"),
                                "publish": tool("publish")},
                         transitions=[("draft", "approve"), ("approve", "publish", "approved")])
    rt = Runtime(MemoryStore()); rt.register_executor("draft", lambda inp, ctx: {"text": "..."})
    rt.start(wf, "run-1"); blocked = rt.run_until_blocked("run-1")   # reason: approval-required
"""

from comet_engine.checks import Check, CheckResult
from comet_engine.definitions import (
    Step,
    Transition,
    Workflow,
    approval,
    checkpoint,
    child,
    define_workflow,
    evidence,
    handoff,
    skill,
    tool,
)
from comet_engine.errors import (
    ConflictError,
    CorruptRunError,
    DefinitionError,
    EngineError,
    RejectedError,
    RunExistsError,
    RunNotFoundError,
    StoreError,
    UnknownDefinitionError,
    UnsafePathError,
)
from comet_engine.guardrails import Guardrails
from comet_engine.runtime import REASONS, ActionFailed, Blocked, Claim, ExecutionContext, Runtime
from comet_engine.state import Action, Outcome, Receipt, RunState, Wait, action_id

__all__ = [
    "REASONS",
    "Action",
    "ActionFailed",
    "Blocked",
    "Check",
    "CheckResult",
    "Claim",
    "ConflictError",
    "CorruptRunError",
    "DefinitionError",
    "EngineError",
    "ExecutionContext",
    "Guardrails",
    "Outcome",
    "Receipt",
    "RejectedError",
    "RunExistsError",
    "RunNotFoundError",
    "RunState",
    "Runtime",
    "Step",
    "StoreError",
    "Transition",
    "UnknownDefinitionError",
    "UnsafePathError",
    "Wait",
    "Workflow",
    "action_id",
    "approval",
    "checkpoint",
    "child",
    "define_workflow",
    "evidence",
    "handoff",
    "skill",
    "tool",
]
