"""records.record: what @dataclass would give, for the classes on the start-up path."""

from __future__ import annotations

import dataclasses

import pytest

from paramcount.ir import Block, Tensor
from paramcount.model import Model
from paramcount.records import field, record, replace


@record(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)
    note: str = field(default="", compare=False, repr=False)


@record(slots=True)
class Cell:
    value: int
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = 2 * self.value


def test_init_defaults_factory_repr_and_value_equality():
    p = Point(1)
    assert (p.x, p.y, p.tags, p.note) == (1, 0, (), "")
    assert repr(p) == "Point(x=1, y=0, tags=())"
    assert p == Point(1, note="ignored") and p != Point(2)
    assert hash(p) == hash(Point(1, 0, ()))
    with pytest.raises(TypeError):
        Point()


def test_frozen_records_refuse_assignment_and_replace_copies():
    p = Point(1, 2)
    with pytest.raises(AttributeError, match="frozen"):
        p.x = 3
    q = replace(p, y=5)
    assert (q.x, q.y) == (1, 5) and p.y == 2


def test_slots_post_init_and_init_false_fields():
    c = Cell(3)
    assert c.size == 6 and not hasattr(c, "__dict__")
    with pytest.raises(TypeError):
        hash(c)  # equal by value and mutable: unhashable, as a dataclass
    with pytest.raises(ValueError, match="size"):
        replace(c, size=1)


def test_the_ir_and_model_keep_their_dataclass_behaviour():
    w = Tensor("weight", (4, 3))
    b = Block("fc", (w, Tensor("bias", (4,))), repeat=2)
    assert b.count == 32 and b == Block("fc", (Tensor("weight", (4, 3)), Tensor("bias", (4,))), repeat=2)
    assert hash(b) == hash(replace(b)) and replace(b, repeat=3).count == 48
    m = Model("m", "test", "x", "C", b, "B", b)
    assert replace(m, name="n").name == "n" and m.config == {} and m.counted_by == "paramcount"


def test_replace_still_takes_a_dataclass():
    @dataclasses.dataclass(frozen=True)
    class D:
        a: int

    assert replace(D(1), a=2) == D(2)


def test_a_record_passes_for_a_dataclass():
    # Model and the IR were dataclasses: dataclasses.replace, fields and asdict keep working
    import paramcount

    m = paramcount.load("meta-llama/Llama-3.2-1B")
    assert dataclasses.is_dataclass(m) and [f.name for f in dataclasses.fields(m)][:2] == ["name", "source"]
    assert dataclasses.replace(m, class_name="X").total == m.total
    assert dataclasses.replace(m.tree, name="x").count == m.tree.count
    assert dataclasses.asdict(Point(1, 2)) == {"x": 1, "y": 2, "tags": (), "note": ""}
    with pytest.raises(ValueError):
        dataclasses.replace(Cell(1), size=3)
