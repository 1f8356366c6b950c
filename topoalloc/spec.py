"""The one spec grammar: how a string names a machine, an allocator, a scheduler, ...

Every component a user can name on the command line or in a configuration
(machines, allocators, schedulers, run-time models, curve orderings, CP-SAT
weights, size distributions) is written the same way::

    NAME                     flat, easy, hamiltonian
    NAME:ITEM,ITEM,...       mesh:16x8   best_fit:curve=hilbert,span=ring
                             torus:4x4x2,wrap=110   custom:4,2,1   uniform:1,32

An ITEM is ``key=value`` (an option) or a bare ``value`` (a positional
argument); positional items come first.  Values are kept as text here; the
component's factory converts each to the type its signature annotates (see
:func:`bind`), so ``curve=123`` stays a string while ``prefer_dims=3``
becomes an int.  Booleans are written ``true/false`` (also ``yes/no``,
``on/off``, ``1/0``); ``none`` is Python's ``None`` where the option allows it.

This module parses; :class:`topoalloc.registry.Registry` looks the name up
and calls the factory.  Both raise :class:`~topoalloc.errors.InvalidArgument`
with the same wording, naming the argument (``allocator``, ``--machine`` ...)
and the offending text.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidArgument

__all__ = ["Spec", "parse", "bind", "format_spec", "to_text"]

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed spec: the name, positional values and options, all as text.

    >>> parse("best_fit:curve=hilbert,span=ring")
    Spec(name='best_fit', args=(), options={'curve': 'hilbert', 'span': 'ring'})
    >>> parse("custom:4,2,1").args
    ('4', '2', '1')
    """

    name: str
    args: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return format_spec(self.name, self.args, self.options)


def parse(text: str, *, argument: str = "spec") -> Spec:
    """Split ``"NAME:ITEM,ITEM,..."`` (see the module notes).

    Raises
    ------
    InvalidArgument
        Empty text, an empty name or item, a repeated option, or a
        positional value after an option.

    >>> parse("mesh:16x8")
    Spec(name='mesh', args=('16x8',), options={})
    >>> parse("flat")
    Spec(name='flat', args=(), options={})
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgument(argument, text, "a non-empty name such as 'flat' or 'name:key=value,...'")
    name, colon, rest = text.strip().partition(":")
    name = name.strip()
    if not name:
        raise InvalidArgument(argument, text, "a name before ':' (NAME or NAME:ITEM,...)")
    args: list[str] = []
    options: dict[str, str] = {}
    if colon:
        if not rest.strip():
            raise InvalidArgument(argument, text, f"items after '{name}:' (or just '{name}')")
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq:
                if options:
                    raise InvalidArgument(argument, text, "positional values before key=value options")
                if not item.strip():
                    raise InvalidArgument(argument, text, "no empty items between commas")
                args.append(item.strip())
                continue
            key = key.strip()
            if not key or not key.isidentifier():
                raise InvalidArgument(argument, text, f"options written key=value with a name as key (got {item.strip()!r})")
            if key in options:
                raise InvalidArgument(argument, text, f"each option once (got {key!r} twice)")
            options[key] = value.strip()
    return Spec(name, tuple(args), options)


def format_spec(name: str, args: tuple[Any, ...] = (), options: dict[str, Any] | None = None) -> str:
    """The spec text of a name, positional values and options (the inverse of :func:`parse`).

    >>> format_spec("best_fit", (), {"curve": "hilbert", "span": "ring"})
    'best_fit:curve=hilbert,span=ring'
    """
    items = [to_text(a) for a in args] + [f"{k}={to_text(v)}" for k, v in (options or {}).items()]
    return f"{name}:{','.join(items)}" if items else name


def to_text(value: Any) -> str:
    """A value as spec text: booleans as ``true/false``, ``None`` as ``none``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------- conversion
class _BadValue(Exception):
    def __init__(self, expected: str):
        self.expected = expected


def _convert(text: str, hint: Any) -> Any:
    """Convert spec text to the annotated type ``hint`` (int, float, bool, str, optionals, unions)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        if type(None) in members and text.lower() in ("none", "null"):
            return None
        errors = []
        for m in members:
            if m is type(None):
                continue
            try:
                return _convert(text, m)
            except _BadValue as exc:
                errors.append(exc.expected)
        raise _BadValue(" or ".join(errors))
    if origin is typing.Literal:
        choices = typing.get_args(hint)
        if text in choices:
            return text
        raise _BadValue(f"one of {', '.join(map(str, choices))}")
    if hint is bool:
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise _BadValue("true or false")
    if hint is int:
        try:
            return int(text)
        except ValueError:
            raise _BadValue("an integer") from None
    if hint is float:
        try:
            v = float(text)
        except ValueError:
            raise _BadValue("a number") from None
        if v != v:
            raise _BadValue("a number, not NaN")
        return v
    return text  # str, Any, paths, or anything the factory parses itself


def _hints(factory: Callable[..., Any]) -> dict[str, Any]:
    """Parameter annotations of a function, or of a class (its ``__init__`` and, for dataclasses, its fields)."""
    targets = [factory.__init__, factory] if inspect.isclass(factory) else [factory]
    out: dict[str, Any] = {}
    for target in targets:
        try:
            out.update(typing.get_type_hints(target))
        except Exception:  # unresolvable annotations: those values stay text
            pass
    return out


def bind(
    factory: Callable[..., Any],
    spec: Spec,
    *,
    kind: str,
    argument: str,
    fixed: tuple[str, ...] = (),
) -> tuple[list[Any], dict[str, Any]]:
    """Match a parsed spec against ``factory``'s signature and convert its values.

    ``fixed`` names parameters the caller supplies itself (e.g. ``topology``):
    a spec may not set them.  Returns the positional and keyword arguments.

    Raises
    ------
    InvalidArgument
        An option the factory does not take (the message lists those it
        does), too many positional values, a value that does not convert to
        the annotated type, or a required argument that is missing.
    """
    sig = inspect.signature(factory)
    hints = _hints(factory)
    params = [p for p in sig.parameters.values() if p.name not in fixed and p.name != "self"]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_pos = next((p for p in params if p.kind is p.VAR_POSITIONAL), None)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    keywords = {p.name: p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    owner = f"{kind} {spec.name!r}"
    valid = ", ".join(keywords) or "(none)"
    # positional values fill the leading positional parameters that have no default
    takes = [p for p in positional if p.default is p.empty]
    if len(spec.args) > len(takes) and var_pos is None:
        if not takes:
            raise InvalidArgument(argument, str(spec), f"no positional value for {owner}: options are key=value among {valid}")
        raise InvalidArgument(argument, str(spec), f"at most {len(takes)} positional value(s) for {owner} ({', '.join(p.name for p in takes)})")
    def convert(text: str, name: str | None, positional: bool = False) -> Any:
        try:
            return _convert(text, hints.get(name, str) if name else str)
        except _BadValue as exc:
            if positional and name:
                usage = f"{spec.name}:{name.upper()} with {name.upper()} {exc.expected}"
            else:
                usage = f"{name or 'the value'} to be {exc.expected}"
            raise InvalidArgument(argument, str(spec), f"{usage} (got {text!r}, for {owner})") from None

    args: list[Any] = []
    for i, text in enumerate(spec.args):
        name = takes[i].name if i < len(takes) else (var_pos.name if var_pos is not None else None)
        args.append(convert(text, name, positional=True))
    kwargs: dict[str, Any] = {}
    filled = {p.name for p in takes[: len(spec.args)]}
    for key, text in spec.options.items():
        p = keywords.get(key)
        if p is None and not var_kw:
            raise InvalidArgument(argument, str(spec), f"an option of {owner}; unknown {key!r}, valid: {valid}")
        if key in filled:
            raise InvalidArgument(argument, str(spec), f"{key!r} given once (positionally or as {key}=)")
        kwargs[key] = convert(text, key)
    missing = [p.name for p in takes[len(spec.args) :] if p.name not in kwargs]
    if missing:
        raise InvalidArgument(argument, str(spec), f"a value for {', '.join(missing)} (for {owner}), e.g. {spec.name}:{missing[0].upper()}")
    return args, kwargs


def defaults(factory: Callable[..., Any], *, fixed: tuple[str, ...] = ()) -> dict[str, Any]:
    """The options ``factory`` takes and their defaults (required ones map to ``inspect.Parameter.empty``)."""
    out: dict[str, Any] = {}
    for p in inspect.signature(factory).parameters.values():
        if p.name in fixed or p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out[p.name] = p.default
    return out
