"""comet_engine: a durable workflow runtime for skill workflows.

One core (a run state machine over a step graph, persisted through a compare-and-swap store) and two
front ends (skill packages with ``comet skill``, and a Python workflow API). The engine never performs
side effects: it proposes actions, constrains them with guardrails, records outcomes and evaluates
checks. It imports nothing else of this repository (DESIGN.md: pytest_comet -> scaffold -> comet_engine).
"""

__all__: list[str] = []
