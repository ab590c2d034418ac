"""Value classes for the objects every count builds, without importing :mod:`dataclasses`.

``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis`` and ``tokenize``): on the
project's 2-core machine that was 15 ms of the 41 ms ``paramcount bert-base-uncased --json``
took, where a bare interpreter starts in 9 ms. The classes a plain count creates (the IR nodes,
:class:`~paramcount.model.Model`, :class:`~paramcount.arch.Family`, the catalog's entries) are
declared with :func:`record` instead, which writes the same ``__init__``, ``__repr__``,
``__eq__`` and ``__hash__`` a dataclass would; everything off that path keeps dataclasses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing is a twentieth of start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_MISSING = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


class Field:
    """What ``dataclasses.field`` says of one field: its default (or a factory), and whether it
    is an ``__init__`` argument, shown by ``repr`` and compared by ``==`` and ``hash``."""

    __slots__ = ("compare", "default", "factory", "init", "repr")

    def __init__(
        self,
        default: Any = _MISSING,
        factory: Callable[[], Any] | None = None,
        init: bool = True,
        repr: bool = True,
        compare: bool = True,
    ):
        self.default, self.factory, self.init, self.repr, self.compare = default, factory, init, repr, compare


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    return Field(default, default_factory, init, repr, compare)


def record(cls: type | None = None, /, *, frozen: bool = False, slots: bool = False, unsafe_hash: bool = False) -> Any:
    """``@dataclass`` for the few classes on the start-up path: fields from the annotations in
    order, defaults from the class body, ``frozen`` (no assignment after ``__init__``),
    ``slots`` and ``unsafe_hash`` as dataclasses mean them. A class may write its own
    ``__init__``; ``__post_init__`` runs after the generated one."""

    def wrap(cls: type) -> type:
        return _make(cls, frozen, slots, unsafe_hash)

    return wrap if cls is None else wrap(cls)


def replace(obj: Any, /, **changes: Any) -> Any:
    """A copy of ``obj`` with ``changes``, for records and dataclasses alike."""
    specs = getattr(type(obj), "__record_fields__", None)
    if specs is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for name, f in specs:
        if not f.init and name in changes:
            raise ValueError(f"field {name} is not an __init__ argument and cannot be replaced")
    given = {name: getattr(obj, name) for name, f in specs if f.init and name not in changes}
    return type(obj)(**given, **changes)


def _make(cls: type, frozen: bool, slots: bool, unsafe_hash: bool) -> type:
    body = dict(cls.__dict__)
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):  # a subclass's fields follow its bases', as in dataclasses
        found.update(base.__dict__.get("__record_fields__", ()))
    for name, kind in body.get("__annotations__", {}).items():
        if str(kind).startswith("ClassVar"):
            continue
        value = body.get(name, _MISSING)
        found[name] = value if isinstance(value, Field) else Field(value)
    specs = tuple(found.items())
    if slots:  # a new class, as dataclasses makes one: slots may not share names with class attributes
        for name, _ in specs:
            body.pop(name, None)
        body.pop("__dict__", None)
        body.pop("__weakref__", None)
        body["__slots__"] = tuple(name for name, _ in specs)
        cls = type(cls)(cls.__name__, cls.__bases__, body)
    else:
        for name, f in specs:  # a class attribute stays only as a plain default
            if isinstance(body.get(name), Field):
                if f.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, f.default)
    cls.__record_fields__ = specs
    cls.__dataclass_fields__ = _DataclassFields()
    if "__init__" not in body:
        cls.__init__ = _init(cls, specs, frozen)
    cls.__repr__ = _repr(cls, specs)
    compared = tuple(name for name, f in specs if f.compare)
    cls.__eq__ = _eq(compared)
    if frozen or unsafe_hash:
        cls.__hash__ = _hash(compared)
    elif "__hash__" not in body:
        cls.__hash__ = None  # as dataclasses do: equal by value and mutable, so unhashable
    if frozen:
        cls.__setattr__ = _frozen
        cls.__delattr__ = _frozen
    return cls


class _DataclassFields:
    """``__dataclass_fields__``, made when first read: what ``dataclasses.replace``, ``fields``,
    ``asdict`` and ``is_dataclass`` look for, so a record passes for the dataclass it replaces
    (``dataclasses`` is imported then, by the caller that asked)."""

    def __get__(self, obj: Any, cls: type) -> dict[str, Any]:
        made = cls.__dict__.get("_dataclass_fields")
        if made is None:
            import dataclasses

            ns: dict[str, Any] = {"__annotations__": {}}
            for name, f in cls.__record_fields__:
                ns["__annotations__"][name] = object
                default = {} if f.default is _MISSING else {"default": f.default}
                factory = {} if f.factory is None else {"default_factory": f.factory}
                ns[name] = dataclasses.field(**default, **factory, init=f.init, repr=f.repr, compare=f.compare)
            made = dataclasses.dataclass(type(cls.__name__, (), ns)).__dataclass_fields__
            type.__setattr__(cls, "_dataclass_fields", made)
        return made


def _init(cls: type, specs: tuple[tuple[str, Field], ...], frozen: bool) -> Callable[..., None]:
    """The generated ``__init__``: arguments in field order, defaults bound by name."""
    scope: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    args, lines = [], []
    for name, f in specs:
        if f.init:
            if f.factory is not None:
                scope[f"_f_{name}"] = f.factory
                args.append(f"{name}=_MISSING")
                value = f"_f_{name}() if {name} is _MISSING else {name}"
            elif f.default is not _MISSING:
                scope[f"_d_{name}"] = f.default
                args.append(f"{name}=_d_{name}")
                value = name
            else:
                args.append(name)
                value = name
        elif f.factory is not None:
            scope[f"_f_{name}"] = f.factory
            value = f"_f_{name}()"
        elif f.default is not _MISSING:
            scope[f"_d_{name}"] = f.default
            value = f"_d_{name}"
        else:
            continue  # set by __post_init__
        lines.append(f"_set(self, {name!r}, {value})" if frozen else f"self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        lines.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(args)}):\n    " + "\n    ".join(lines or ["pass"])
    exec(source, scope)  # our own source, written above from the class's field names
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _repr(cls: type, specs: tuple[tuple[str, Field], ...]) -> Callable[[Any], str]:
    shown = tuple(name for name, f in specs if f.repr)

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({inner})"

    return __repr__


def _eq(compared: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in compared)

    return __eq__


def _hash(compared: tuple[str, ...]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in compared))

    return __hash__


def _frozen(self: Any, name: str, *value: Any) -> None:
    raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")
