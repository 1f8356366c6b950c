"""One small registry class and the four registries of the package.

Registries map names to factories.  A spec string such as
``"best_fit:curve=hilbert,ring=true"`` names a factory and keyword options; the
CLI and configuration files are the only places that turn strings into objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from .errors import InvalidArgument, UnknownName

__all__ = ["Registry", "parse_spec", "ALLOCATORS", "SCHEDULERS", "TOPOLOGIES", "METRICS"]

T = TypeVar("T")


def _coerce(text: str) -> Any:
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_spec(spec: str, *, argument: str = "spec") -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the name and coerced options.

    Values that read as booleans, ``none``, integers or floats are converted.

    >>> parse_spec("best_fit:curve=hilbert,ring=true")
    ('best_fit', {'curve': 'hilbert', 'ring': True})
    >>> parse_spec("flat")
    ('flat', {})
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgument(argument, spec, "a non-empty name such as 'flat' or 'name:key=value'")
    name, _, rest = spec.strip().partition(":")
    options: dict[str, Any] = {}
    if rest:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise InvalidArgument(argument, spec, "options written as key=value separated by commas")
            options[key.strip()] = _coerce(value.strip())
    return name.strip(), options


class Registry(Generic[T]):
    """Names to factories, with helpful errors for unknown names.

    >>> r = Registry("widget")
    >>> @r.register("box")
    ... def make_box(size=1):
    ...     return ("box", size)
    >>> r.create("box:size=3")
    ('box', 3)
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, Callable[..., T]] = {}
        self._docs: dict[str, str] = {}

    def register(self, name: str, *, doc: str | None = None) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._items and self._items[name] is not factory:
                raise InvalidArgument("name", name, f"a {self.kind} name not registered yet")
            self._items[name] = factory
            summary = doc or (factory.__doc__ or "").strip().splitlines()[0:1]
            self._docs[name] = summary if isinstance(summary, str) else (summary[0] if summary else "")
            return factory

        return deco

    def get(self, name: str) -> Callable[..., T]:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownName(self.kind, name, sorted(self._items)) from None

    def create(self, spec: str, /, **extra: Any) -> T:
        """Build the object a spec string names; ``extra`` keywords are added to its options."""
        name, options = parse_spec(spec, argument=self.kind)
        factory = self.get(name)
        options.update(extra)
        try:
            return factory(**options)
        except TypeError as exc:  # unknown option names
            raise InvalidArgument(self.kind, spec, f"options accepted by {name!r} ({exc})") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def describe(self) -> dict[str, str]:
        return {n: self._docs.get(n, "") for n in self.names()}

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)


ALLOCATORS: Registry = Registry("allocator")
SCHEDULERS: Registry = Registry("scheduler")
TOPOLOGIES: Registry = Registry("topology")
METRICS: Registry = Registry("metric")
