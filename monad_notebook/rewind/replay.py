"""Running a rebuild's plan: one approval for the whole script, then each step, its outcome reported.

The script is asked about as the python tool asks about code (``approval_refusal``: the same setting,
the same gate, the same question), once; each step then runs through the python tool itself, so its
output, plots and errors show in the cell as the agent's code does, within the same time limit. A
step whose inputs an earlier step failed to make is skipped, and says so. Each step is a change of
the rebuild's own epoch (its files kept, as a turn's are) and is noted in the workspace record as
made by the call or cell it reruns, so what comes back keeps its provenance.

An interrupt (the kernel's stop button) ends the rebuild between two statements of a step: what ran
stays, the report says where it stopped, and ``%monad rebuild`` again plans from what is still lost,
so it goes on where it stopped (a step cut short is rerun whole).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.python import approval_refusal, python
from monad_notebook.rewind.rebuild import Plan, Step

if TYPE_CHECKING:
    from monad_notebook.rewind.service import Change, KernelRewind
    from monad_notebook.workspace.record import WorkspaceRecord


@dataclass(frozen=True)
class Outcome:
    """How one step went: ``ok``, ``error`` (``detail``: the error's line), ``skipped`` (why) or ``interrupted``."""

    step: Step
    result: str
    detail: str = ""


@dataclass
class RebuildReport:
    """What a rebuild did: each step's outcome, the lost names back and still lost, where it stopped."""

    plan: Plan
    outcomes: list[Outcome] = field(default_factory=list)
    back: list[str] = field(default_factory=list)
    still_lost: list[str] = field(default_factory=list)
    refused: str = ""  # not run at all: why
    interrupted: bool = False

    def lines(self) -> list[str]:
        plan, out = self.plan, []
        if not plan.lost:
            return ["nothing to rebuild: the workspace record lists no name this kernel lost"]
        if self.refused:
            return [f"rebuild not run: {self.refused}"]
        for number, outcome in enumerate(self.outcomes, 1):
            detail = f": {outcome.detail}" if outcome.detail else ""
            out.append(f"step {number} of {len(plan.steps)}, {outcome.step.label}: {outcome.result}{detail}")
            if outcome.step.outside and outcome.result in ("ok", "error"):
                why = "its result may differ from the first run" if outcome.result == "ok" else "which may be why"
                out.append(f"  it depends on {'; '.join(outcome.step.outside)}: {why}")
        if self.interrupted:
            out.append(
                f"interrupted at step {len(self.outcomes)} of {len(plan.steps)}: what ran stays; "
                "%monad rebuild again goes on with what is still lost"
            )
        out.append(f"back: {len(self.back)} of {len(plan.lost)} lost name(s){_listed(self.back)}")
        if self.still_lost:
            out.append(f"still lost: {', '.join(self.still_lost)}")
        out += [f"not made by any code here: {name}: {why}" for name, why in plan.unmade]
        if plan.withheld:
            held = ", ".join(plan.withheld)
            out.append(
                f"not shown or run, as they look like they hold a secret: your cell(s) {held}; run them yourself"
            )
        return out + plan.notes


def _listed(names: list[str]) -> str:
    return f" ({', '.join(names)})" if names else ""


def run_plan(
    plan: Plan,
    context: Callable[[], ToolContext],
    namespace: Mapping[str, Any],
    rewind: KernelRewind | None = None,
    workspace: WorkspaceRecord | None = None,
) -> RebuildReport:
    """Ask once about the whole script, then run each step (``context()``: a fresh tool context per step)."""
    report = RebuildReport(plan)
    if not plan.steps:
        report.still_lost = [name for name in plan.lost if name not in namespace]
        return report
    refusal = approval_refusal(context(), plan.script())
    if refusal is not None:
        report.refused = refusal
        return report
    epoch = rewind.begin_rebuild() if rewind is not None and rewind.enabled else None
    failed: set[str] = set()
    try:
        for step in plan.steps:
            missing = sorted(step.reads & failed)
            if missing:
                failed |= step.binds
                report.outcomes.append(
                    Outcome(step, "skipped", f"needs {', '.join(missing)}, which a failed step makes")
                )
                continue
            report.outcomes.append(Outcome(step, "interrupted"))
            change = rewind.change_in(epoch, step.made_by, step.code) if rewind is not None and epoch else None
            outcome = _run(step, context, change, workspace)
            report.outcomes[-1] = outcome
            if outcome.result != "ok":
                failed |= step.binds
    except KeyboardInterrupt:
        report.interrupted = True
    report.back = [name for name in plan.lost if name in namespace]
    report.still_lost = [name for name in plan.lost if name not in namespace]
    return report


def _run(step: Step, context: Callable[[], ToolContext], change: Change | None, workspace: Any) -> Outcome:
    ctx = replace(context(), python_approval="auto", written="")  # asked already, about the whole script
    try:
        text = python.func(ctx, code=step.code)
    finally:
        if change is not None:
            change.finish()
        if workspace is not None:
            workspace.take(step.made_by, code=step.code)
    if ctx.outcome == "error":
        return Outcome(step, "error", text[text.rfind("error: ") + 7 :].splitlines()[0] if "error: " in text else "")
    return Outcome(step, "ok")
