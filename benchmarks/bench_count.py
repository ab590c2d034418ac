"""Counting every catalog model: paramcount versus transformers on the meta device.

Run: python benchmarks/bench_count.py   (needs the test extras: torch and transformers)

Both sides start from the same config dict and give the same total (asserted); the
figures are per model, and the ratio is the point: it holds across machines.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import warnings

import paramcount
from paramcount.frontends import catalog


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def ours(entry: catalog.Entry) -> int:
    m = paramcount.load(entry.config)
    m.components()
    return m.total


def meta(entry: catalog.Entry, cls: str) -> int:
    import torch
    import transformers

    model_type = paramcount.load(entry.config).model_type
    kwargs = {k: v for k, v in entry.config.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(model_type, **kwargs)
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    return sum(p.numel() for p in model.parameters())


def nodes(tree) -> int:
    """Distinct nodes of a tree (a shared subtree once)."""
    seen: set[int] = set()

    def walk(node) -> None:
        if id(node) not in seen:
            seen.add(id(node))
            for c in getattr(node, "children", ()):
                walk(c)

    walk(tree)
    return len(seen)


def floor(tree) -> float:
    """The least a count of this tree can take with the IR as it is: the same nodes built by
    straight-line constructor calls (no config read, no builder), plus the per-kind sums.
    Children tuples are shared as the families share them."""
    from paramcount.count import by_kind
    from paramcount.ir import Block, Tensor, Tie

    lines: list[str] = []
    names: dict[int, str] = {}

    def emit(node) -> str:
        if id(node) in names:
            return names[id(node)]
        var = f"n{len(names)}"
        if isinstance(node, Tensor):
            lines.append(f"{var} = Tensor({node.name!r}, {tuple(map(int, node.shape))!r}, {node.kind!r})")
        elif isinstance(node, Tie):
            lines.append(f"{var} = Tie({node.name!r}, {tuple(map(int, node.shape))!r}, {node.target!r}, {node.kind!r})")
        else:
            if id(node.children) not in names:
                kids = "".join(f"{emit(c)}, " for c in node.children)
                names[id(node.children)] = f"c{len(names)}"
                lines.append(f"{names[id(node.children)]} = ({kids})")
            lines.append(
                f"{var} = Block({node.name!r}, {names[id(node.children)]}, {node.repeat!r}, {node.start!r}, "
                f"{node.kind!r}, {node.active!r}, None, {node.label!r}, {node.tower!r})"
            )
        names[id(node)] = var
        return var

    root = emit(tree)
    scope = {"Tensor": Tensor, "Tie": Tie, "Block": Block}
    exec("def build():\n    " + "\n    ".join(lines) + f"\n    return {root}\n", scope)  # our own text
    built = scope["build"]()
    assert built.count == tree.count
    return best_of(lambda: by_kind(scope["build"]()), 20)


def cold_start(args: list[str], repeat: int = 5) -> float:
    return best_of(lambda: subprocess.run(args, check=True, capture_output=True), repeat)


def main() -> None:
    warnings.filterwarnings("ignore")
    import transformers  # noqa: F401  (imported once up front: not part of the per-model figure)

    rows = []
    for entry in catalog.entries():
        m = paramcount.load(entry.config)
        # the suite checks every class tensor by tensor; here the backbones must agree too
        # (classes can differ where we follow the checkpoint: Flan-T5's untied head)
        assert m.backbone_total == meta(entry, m.backbone_class), entry.id
        a = best_of(lambda e=entry: ours(e), 20)
        b = best_of(lambda e=entry, c=m.class_name: meta(e, c), 3)
        rows.append((entry.id, a, b))
        print(f"{entry.id:45s} paramcount {a * 1e3:8.3f} ms   meta {b * 1e3:9.1f} ms   {b / a:8.0f}x", flush=True)
    ratios = sorted((b / a, name) for name, a, b in rows)
    print(
        f"\n{len(rows)} models: paramcount median {statistics.median(a for _, a, _ in rows) * 1e3:.3f} ms, "
        f"max {max(a for _, a, _ in rows) * 1e3:.3f} ms per model; meta median "
        f"{statistics.median(b for _, _, b in rows) * 1e3:.1f} ms"
    )
    slow = sorted(((a, name) for name, a, _ in rows if a >= 1e-4), reverse=True)
    print(
        f"{len(slow)} of {len(rows)} models take 0.1 ms or more (goal: none): "
        + ", ".join(f"{name} {a * 1e3:.3f}" for a, name in slow[:10])
        + (" …" if len(slow) > 10 else "")
    )
    # How far each of the slowest is from the floor of a tree this size (issue 10's goal).
    for a, name in slow[:5]:
        entry = catalog.get(name)
        tree = paramcount.load(entry.config).tree
        print(f"  {name}: {a * 1e3:.3f} ms; its {nodes(tree)} nodes alone take {floor(tree) * 1e3:.3f} ms")
    (low, low_name), (high, high_name) = ratios[0], ratios[-1]
    print(
        f"speed-up: median {statistics.median(r for r, _ in ratios):,.0f}x, "
        f"min {low:,.0f}x ({low_name}), max {high:,.0f}x ({high_name})"
    )

    # A catalog name, as users type it (issue 12's goal: within 4x a bare interpreter's start).
    cli = cold_start([sys.executable, "-m", "paramcount", "bert-base-uncased", "--json"], repeat=20)
    imp = cold_start([sys.executable, "-c", "import transformers"])
    base = cold_start([sys.executable, "-c", "pass"], repeat=20)
    print(
        f"cold start: paramcount bert-base-uncased --json {cli * 1e3:.1f} ms; bare python {base * 1e3:.1f} ms "
        f"({cli / base:.1f}x bare; goal 4x); python -c 'import transformers' {imp * 1e3:.0f} ms ({imp / cli:.1f}x ours)"
    )


if __name__ == "__main__":
    main()
