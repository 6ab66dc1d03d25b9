"""``prove`` does not count a run that crashed inside a tool as a check of the task: a tool that
raises (an ``internal_error`` step) in a perturbed plan or a probe is a problem of its own,
where it used to pass as "the perturbation fails"."""

from __future__ import annotations

from phoneenv.env import PhonePlanEnv
from phoneenv.tasks import get_task
from phoneenv.tasks.validate import prove
from phoneenv.tools import ToolDef


def test_a_tool_that_raises_on_a_perturbed_argument_is_a_problem(monkeypatch):
    task = get_task("clock.set_alarm/0")
    env = PhonePlanEnv(tasks=[task])
    assert prove(task, env).ok
    backend = env.backend
    name = "clock.create_alarm"
    real = backend._tools[name]
    expected = next(c.arguments for c in task.reference_plan if c.name == name)

    def brittle(app, **arguments):
        if arguments.get("time") != expected.get("time"):
            raise AttributeError("'Clock' object has no attribute 'INVALID_ARGUMENT'")  # a typo in an error path
        return real.method(app, **arguments)

    monkeypatch.setattr(backend, "_tools", {**backend._tools, name: ToolDef(real.spec, real.validator, brittle)})
    proof = prove(task, env)
    assert not proof.ok
    crashed = [p for p in proof.problems if "failed inside the backend" in p]
    assert crashed and all("clock.create_alarm" in p for p in crashed), proof.problems
    assert any(p.startswith("perturbing ") for p in crashed)


def test_a_hand_written_task_names_its_criteria_and_plays_with_the_reference_agent():
    """Criteria written without ids get a template's (``created:<table>``, then ``#2``); the
    reference agent plays a task outside the suite through ``for_tasks`` and says how when not."""
    import pytest

    from agents.reference import ReferenceAgent
    from phoneenv.contract import AnswerCriterion, StateCriterion, TaskSpec, ToolCall
    from phoneenv.evaluation import run_episodes

    alarm = {"time": "06:10"}
    task = TaskSpec(
        id="my.two_alarms/0", domain="time", goal="Set alarms at 06:10 and 06:20.", apps=["clock"],
        criteria=[StateCriterion(table="clock.alarms", change="created", where=alarm, count=1),
                  StateCriterion(table="clock.alarms", change="created", where={"time": "06:20"}, count=1),
                  AnswerCriterion(id="", contains=["06:10"])],
        reference_plan=[ToolCall(name="clock.create_alarm", arguments=alarm),
                        ToolCall(name="clock.create_alarm", arguments={"time": "06:20"}),
                        ToolCall(name="finish", arguments={"answer": "Alarms set for 06:10 and 06:20."})],
    )  # fmt: skip
    assert [c.id for c in task.criteria] == ["created:clock.alarms", "created:clock.alarms#2", "answer"]
    with pytest.raises(KeyError, match=r"ReferenceAgent\.for_tasks"):
        run_episodes(ReferenceAgent(), [task])
    [result] = run_episodes(ReferenceAgent.for_tasks([task]), [task])
    assert result.success
