"""The task graph of one job, as traced from its body."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .task import TaskDefinition


@dataclass(frozen=True, slots=True)
class InputEdge:
    """A data edge: parameter ``param`` of the downstream task reads ``upstream``'s output."""

    param: str
    upstream: str
    all_partitions: bool = False


@dataclass(frozen=True, slots=True)
class TaskNode:
    """One task of a job: its definition plus the edges the call created."""

    definition: TaskDefinition
    inputs: tuple[InputEdge, ...] = ()
    control_deps: tuple[str, ...] = ()
    upstream: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """Every task this one depends on (data and control), in first-seen order."""

    def __post_init__(self) -> None:  # computed once: checks, orderings and codegen all ask
        for_each = self.definition.for_each
        loop_input = for_each.inputs_task if for_each is not None else None
        keys = [*(edge.upstream for edge in self.inputs), *self.control_deps]
        if loop_input is not None:
            keys.append(loop_input)
        object.__setattr__(self, "upstream", tuple(dict.fromkeys(keys)))

    @property
    def key(self) -> str:
        return self.definition.key


@dataclass(frozen=True)
class TaskGraph:
    """The tasks of a job in call order, with a checked acyclic dependency relation."""

    job_name: str
    nodes: Mapping[str, TaskNode] = field(default_factory=dict)
    _in_call_order: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        self._check_references()
        self._check_inputs_stored()
        # Tasks are mostly called after the tasks they depend on: then the call order is
        # already a topological order, and the graph is acyclic without a search.
        position = {key: index for index, key in enumerate(self.nodes)}
        in_call_order = all(
            position[upstream] < position[node.key] for node in self for upstream in node.upstream
        )
        object.__setattr__(self, "_in_call_order", in_call_order)
        if not in_call_order:
            self._check_acyclic()

    def __iter__(self) -> Iterator[TaskNode]:
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, key: str) -> TaskNode:
        return self.nodes[key]

    def topological_order(self) -> list[str]:
        """Task keys such that every task comes after its upstream tasks (stable)."""
        if self._in_call_order:  # what the search below returns for such a graph
            return list(self.nodes)
        order: list[str] = []
        done: set[str] = set()
        for key in self.nodes:
            self._visit(key, done, order)
        return order

    def downstream_of(self, key: str) -> list[str]:
        """Keys of the tasks that depend directly on ``key``."""
        return [node.key for node in self if key in node.upstream]

    def _visit(self, key: str, done: set[str], order: list[str]) -> None:
        if key in done:
            return
        done.add(key)
        for upstream in self.nodes[key].upstream:
            self._visit(upstream, done, order)
        order.append(key)

    def _check_references(self) -> None:
        for node in self:
            for upstream in node.upstream:
                if upstream not in self.nodes:
                    raise node.definition.error(
                        f"depends on task {upstream!r}, which is not called in this job body",
                        self.job_name,
                    )

    def _check_inputs_stored(self) -> None:
        """Refuse a data edge from a task without an IoManager (tasks are separate processes)."""
        for node in self:
            for edge in node.inputs:
                if self.nodes[edge.upstream].definition.io_manager is None:
                    raise node.definition.error(
                        f"argument {edge.param!r} reads the output of task {edge.upstream!r}, "
                        "which has no io_manager to store it; give that task an io_manager "
                        "(e.g. SparkTableIoManager(...)), or use "
                        f"depends_on=[{edge.upstream}] to run after it without its output",
                        self.job_name,
                    )

    def _check_acyclic(self) -> None:
        state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
        for start in self.nodes:
            if state.get(start) == 2:
                continue
            stack: list[tuple[str, Iterator[str]]] = [(start, iter(self.nodes[start].upstream))]
            state[start] = 1
            while stack:
                key, upstream = stack[-1]
                nxt = next(upstream, None)
                if nxt is None:
                    state[key] = 2
                    stack.pop()
                elif state.get(nxt) == 1:
                    path = [k for k, _ in stack]
                    cycle = [*path[path.index(nxt) :], nxt]
                    raise self.nodes[nxt].definition.error(
                        f"dependency cycle: {' -> '.join(reversed(cycle))}", self.job_name
                    )
                elif state.get(nxt) is None:
                    state[nxt] = 1
                    stack.append((nxt, iter(self.nodes[nxt].upstream)))
