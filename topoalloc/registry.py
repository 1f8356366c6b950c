"""One small registry class and the registries of the package.

A registry maps names to factories.  A spec string in the package's one
grammar (:mod:`topoalloc.spec`: ``"best_fit:curve=hilbert,span=ring"``,
``"mesh:16x8"``) names a factory and its arguments; the registry checks the
arguments against the factory's signature *before* calling it, converts each
value to the annotated type, and lists the valid options when one is unknown.
Errors raised inside a factory are the factory's own (a ``TypeError`` from a
bug stays a ``TypeError``).  The CLI and configuration files are the only
places that turn strings into objects.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import spec as _spec
from .errors import InvalidArgument, UnknownName

if TYPE_CHECKING:
    from .alloc.base import Allocator
    from .metrics.scheduling import Metric
    from .sched.base import Scheduler
    from .topology.base import Topology

__all__ = ["Registry", "Entry", "parse_spec", "ALLOCATORS", "SCHEDULERS", "TOPOLOGIES", "METRICS"]

T = TypeVar("T")


def parse_spec(spec: str, *, argument: str = "spec") -> tuple[str, dict[str, str]]:
    """The name and the ``key=value`` options of a spec, as text (see :mod:`topoalloc.spec`).

    >>> parse_spec("best_fit:curve=hilbert,span=ring")
    ('best_fit', {'curve': 'hilbert', 'span': 'ring'})
    """
    s = _spec.parse(spec, argument=argument)
    return s.name, dict(s.options)


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered name: its factory, a one-line summary and, optionally, which machines it accepts."""

    name: str
    factory: Callable[..., T]
    doc: str
    accepts: Callable[[Any], bool] | None = None

    def options(self, fixed: tuple[str, ...] = ()) -> dict[str, Any]:
        """Option names and defaults (``inspect.Parameter.empty`` for required ones)."""
        return _spec.defaults(self.factory, fixed=fixed)


class Registry(Generic[T]):
    """Names to factories, with strict, helpful errors.

    Parameters
    ----------
    kind : str
        What the registry holds, for messages (``"allocator"``).
    fixed : tuple of str
        Factory parameters the caller supplies itself (an allocator's
        ``topology``): a spec cannot set them.
    builtins : callable, optional
        Registers the entries the package itself provides; called once,
        the first time the registry is used (looked up, listed, counted or
        registered into), so importing the package stays cheap.

    Examples
    --------
    >>> r = Registry("widget")
    >>> @r.register("box")
    ... def make_box(size: int = 1):
    ...     return ("box", size)
    >>> r.create("box:size=3")
    ('box', 3)
    >>> r.create("box:colour=red")
    Traceback (most recent call last):
    ...
    topoalloc.errors.InvalidArgument: argument widget='box:colour=red': expected an option of widget 'box'; unknown 'colour', valid: size
    >>> r.canonical("box")
    'box:size=1'
    """

    def __init__(self, kind: str, *, fixed: tuple[str, ...] = (), builtins: Callable[[], None] | None = None):
        self.kind = kind
        self.fixed = fixed
        self._entries: dict[str, Entry[T]] = {}
        self._builtins = builtins  # registers the package's own entries: called once, before the first use

    def _ready(self) -> None:
        load, self._builtins = self._builtins, None
        if load is not None:
            load()

    def register(
        self, name: str, *, doc: str | None = None, accepts: Callable[[Any], bool] | None = None
    ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator registering ``factory`` under ``name``.

        ``accepts(topology) -> bool`` (allocators) says which machines the
        factory takes; a class's own ``accepts`` classmethod is used when not
        given.  Registering a second, different factory under a taken name
        raises.
        """
        if not isinstance(name, str) or not name or ":" in name or "," in name:
            raise InvalidArgument("name", name, f"a {self.kind} name without ':' or ','")

        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if not (getattr(factory, "__module__", None) or "").startswith("topoalloc."):
                self._ready()  # a plugin's entry: the built-in ones first, so that it cannot take their names
            old = self._entries.get(name)
            if old is not None and old.factory is not factory:
                raise InvalidArgument("name", name, f"a {self.kind} name not registered yet")
            summary = doc if doc is not None else ((factory.__doc__ or "").strip().splitlines() or [""])[0]
            acc = accepts if accepts is not None else getattr(factory, "accepts", None)
            self._entries[name] = Entry(name, factory, summary, acc)
            return factory

        return deco

    def entry(self, name: str) -> Entry[T]:
        self._ready()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.kind, name, sorted(self._entries)) from None

    def get(self, name: str) -> Callable[..., T]:
        """The factory registered under ``name``."""
        return self.entry(name).factory

    def _bind(self, spec: str | _spec.Spec, argument: str | None, extra: dict[str, Any]) -> tuple[Entry[T], list[Any], dict[str, Any]]:
        parsed = spec if isinstance(spec, _spec.Spec) else _spec.parse(spec, argument=argument or self.kind)
        entry = self.entry(parsed.name)
        args, kwargs = _spec.bind(entry.factory, parsed, kind=self.kind, argument=argument or self.kind, fixed=self.fixed + tuple(extra))
        return entry, args, kwargs

    def create(self, spec: str | _spec.Spec, /, *, argument: str | None = None, **extra: Any) -> T:
        """Build the object a spec names; ``extra`` keywords (e.g. ``topology``) are passed as well.

        ``argument`` names the user's argument in error messages (``--allocator``).
        """
        entry, args, kwargs = self._bind(spec, argument, extra)
        try:
            return entry.factory(*args, **kwargs, **extra)
        except InvalidArgument as exc:
            # a value the spec gave that the factory refused: name the user's argument and whole spec
            if exc.name in _spec.defaults(entry.factory, fixed=self.fixed + tuple(extra)):
                raise InvalidArgument(argument or self.kind, str(spec), f"{exc.name} {exc.expected} (got {exc.name}={exc.value!r})") from None
            raise

    def canonical(self, spec: str | _spec.Spec, /, *, argument: str | None = None, built: Any = None, **extra: Any) -> str:
        """The full spec with every option written out (defaults included).

        The same object is built from it, so a run's summary can record what
        reproduces it.  An option whose default is ``None`` (the component
        chooses, e.g. a curve suited to the machine) is written as what
        ``built`` (the object made from the spec) holds under that name, if
        it is a plain value, and left out otherwise.
        """
        entry, args, kwargs = self._bind(spec, argument, extra)
        skip = set(self.fixed) | set(extra) | {"self"}
        opts: dict[str, Any] = {}
        for p in inspect.signature(entry.factory).parameters.values():
            if p.name in skip or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or (p.default is p.empty and p.name not in kwargs):
                continue  # fixed by the caller, or filled by a positional value
            value = kwargs.get(p.name, p.default)
            if value is None and built is not None:
                value = getattr(built, p.name, None)
                value = value if isinstance(value, (str, int, float)) else None
            if value is not None:
                opts[p.name] = value
        opts.update((k, v) for k, v in kwargs.items() if k not in opts and v is not None)  # **options factories
        return _spec.format_spec(entry.name, tuple(args), opts)

    def names(self) -> list[str]:
        self._ready()
        return sorted(self._entries)

    def describe(self) -> dict[str, str]:
        return {n: self._entries[n].doc for n in self.names()}

    def __contains__(self, name: object) -> bool:
        self._ready()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._ready()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self)} entries)"


def _load_builtins() -> None:
    """Register the package's own allocators, metrics, schedulers and machines (importing their modules)."""
    for reg in (ALLOCATORS, SCHEDULERS, TOPOLOGIES, METRICS):
        reg._builtins = None  # (their modules register while this runs)
    from . import alloc, metrics, topology  # noqa: F401
    from .sched import conservative, easy, fcfs  # noqa: F401


ALLOCATORS: Registry[Allocator] = Registry("allocator", fixed=("topology",), builtins=_load_builtins)
SCHEDULERS: Registry[Scheduler] = Registry("scheduler", builtins=_load_builtins)
TOPOLOGIES: Registry[Topology] = Registry("machine", builtins=_load_builtins)
METRICS: Registry[Metric] = Registry("metric", builtins=_load_builtins)
