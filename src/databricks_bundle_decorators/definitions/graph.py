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
    _order: tuple[str, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        self._check_references()
        self._check_inputs_stored()
        object.__setattr__(self, "_order", self._search())

    def __iter__(self) -> Iterator[TaskNode]:
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, key: str) -> TaskNode:
        return self.nodes[key]

    def topological_order(self) -> list[str]:
        """Task keys such that every task comes after its upstream tasks (stable)."""
        return list(self._order)

    def downstream_of(self, key: str) -> list[str]:
        """Keys of the tasks that depend directly on ``key``."""
        return [node.key for node in self if key in node.upstream]

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

    def _search(self) -> tuple[str, ...]:
        """The keys in depth-first post-order over upstream edges; a cycle is refused."""
        order: dict[str, None] = {}  # finished keys
        on_path: set[str] = set()
        for start in self.nodes:
            if start in order:
                continue
            stack: list[tuple[str, Iterator[str]]] = [(start, iter(self.nodes[start].upstream))]
            on_path.add(start)
            while stack:
                key, upstream = stack[-1]
                nxt = next(upstream, None)
                if nxt is None:
                    on_path.discard(key)
                    order[key] = None
                    stack.pop()
                elif nxt in on_path:
                    path = [k for k, _ in stack]
                    cycle = [*path[path.index(nxt) :], nxt]
                    raise self.nodes[nxt].definition.error(
                        f"dependency cycle: {' -> '.join(reversed(cycle))}", self.job_name
                    )
                elif nxt not in order:
                    on_path.add(nxt)
                    stack.append((nxt, iter(self.nodes[nxt].upstream)))
        return tuple(order)
