"""A held-out corpus of real ``print(model)`` texts, and how the printout reader counts them.

Each text is printed by transformers itself on the meta device (no weights), from the catalog's
published configs (the class each names) and from transformers' default config of every model
type it can build (``AutoModel.from_config``). The reader (paramcount.frontends.printout) then
counts each text, told the tie the config sets (print(model) cannot show ties), and each is one of:

* exact: not flagged and equal to transformers' count;
* flagged: marked ``exact: false``: a lower bound at most transformers' count, or a count that may
  hold a shared module more than once (no bound, and said so);
* wrong: marked exact and not equal, or a lower bound above the true count: a bug.

``score`` also counts apart the texts with fused experts (transformers 5 prints none of their widths).

Needs torch and transformers (the test extras); not run in CI. tests/fixtures/printouts.json was
cut from a corpus printed by transformers 5.23. Usage::

    python tools/printout_corpus.py build corpus.jsonl [--only TYPE,...]
    python tools/printout_corpus.py score corpus.jsonl [--show wrong|flagged|all]
    python tools/printout_corpus.py fixtures corpus.jsonl tests/fixtures/printouts.json 42
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_TEXT = 400_000  # a printout past this is a model with unrolled unlike layers: skipped


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())  # parameters() yields a shared tensor once


def _tied(model) -> bool:
    """Whether any parameter is shared (a tied head, T5's and BART's shared embeddings)."""
    return len(list(model.named_parameters(remove_duplicate=False))) > len(list(model.named_parameters()))


def _record(source: str, model) -> dict | None:
    text = str(model)
    if len(text) > MAX_TEXT:
        return None
    return {"source": source, "class": type(model).__name__, "total": _count(model), "tied": _tied(model), "text": text}


def _catalog():
    """(source, config dict, class name) of every catalog entry."""
    for path in sorted((ROOT / "src/paramcount/catalog").glob("*.json")):
        entry = json.loads(path.read_text())
        config = entry.get("config") or {}
        cls = (entry.get("published") or {}).get("class") or (config.get("architectures") or [None])[0]
        if config.get("model_type") and cls:
            yield f"catalog:{entry['id']}", config, cls


def _build_catalog(config: dict, cls: str):
    import torch
    import transformers

    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "architectures", "auto_map")}
    cfg = transformers.AutoConfig.for_model(config["model_type"], **kwargs)
    with torch.device("meta"):
        return getattr(transformers, cls)(cfg)


def _build_default(model_type: str):
    import torch
    import transformers

    cfg = transformers.AutoConfig.for_model(model_type)
    with torch.device("meta"):
        return transformers.AutoModel.from_config(cfg)


def build(out: Path, only: set[str] | None) -> None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    jobs = [(s, lambda c=c, k=k: _build_catalog(c, k)) for s, c, k in _catalog()]
    jobs += [(f"default:{mt}", lambda mt=mt: _build_default(mt)) for mt in sorted(CONFIG_MAPPING_NAMES)]
    if only:
        jobs = [(s, f) for s, f in jobs if s.split(":", 1)[1] in only or s in only]
    kept = failed = 0
    with open(out, "w", encoding="utf-8") as f:
        for source, make in jobs:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rec = _record(source, make())
            except Exception as e:  # a type that needs a backbone download, timm, a tokenizer...
                failed += 1
                print(f"skip {source}: {type(e).__name__}: {str(e)[:100]}", file=sys.stderr)
                continue
            if rec:
                f.write(json.dumps(rec) + "\n")
                f.flush()
                kept += 1
    print(f"{kept} printouts written to {out}; {failed} configs could not be built")


def recognised(rec: dict) -> bool:
    """Whether a native family of paramcount defines the printed class."""
    from paramcount.frontends.printout import _family

    fam = _family(rec["class"])
    return fam is not None and rec["class"] in fam.classes


def classify(rec: dict) -> tuple[str, int, str | None]:
    """(exact | flagged | wrong | refused, the reader's total, why)."""
    from paramcount.errors import ParamcountError
    from paramcount.frontends.printout import FUSED, from_text

    try:
        p = from_text(rec["text"], rec["source"], tied=rec["tied"])
    except ParamcountError as e:
        return "refused", 0, str(e)
    rec["fused"] = any(u.reason == FUSED for u in p.unknown)
    got, true = p.model.total, rec["total"]
    if p.model.inexact:  # a lower bound is at most the truth; a count that may hold a module twice is no bound
        return ("flagged" if got <= true or not p.lower_bound else "wrong"), got, p.model.inexact
    return ("exact" if got == true else "wrong"), got, None


def _read(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def score(path: Path, show: str | None) -> None:
    tallies: dict[str, Counter[str]] = {}
    for rec in _read(path):
        kind, got, why = classify(rec)
        known = recognised(rec)
        origin = rec["source"].split(":", 1)[0]
        fused = f"{origin}, with fused experts" if rec.get("fused") else f"{origin}, no fused experts"
        for group in (
            "all",
            "recognised" if known else "other",
            origin,
            f"{origin}, recognised" if known else "",
            fused,
        ):
            if group:
                tallies.setdefault(group, Counter())[kind] += 1
        if show in (kind, "all"):
            mark = "*" if known else " "
            print(f"{kind:8}{mark} {rec['source']} ({rec['class']}): {got:,} vs {rec['total']:,}  {(why or '')[:300]}")
    for group, tally in tallies.items():
        n = sum(tally.values()) or 1
        said = ", ".join(f"{k} {v} ({100 * v / n:.1f}%)" for k, v in tally.most_common())
        print(f"{group}: {said} of {sum(tally.values())} printouts")


def fixtures(path: Path, out: Path, n: int) -> None:
    """A small subset for tests/fixtures: of the classes paramcount's families define, the
    shortest text of each, those whose count the family fills in first."""
    from paramcount.frontends.printout import from_text

    def filled(rec: dict) -> bool:
        notes = from_text(rec["text"], rec["source"], tied=rec["tied"]).model.notes
        return any(note.startswith("filled from the family") for note in notes)

    records = sorted((r for r in _read(path) if recognised(r)), key=lambda r: (not filled(r), len(r["text"])))
    seen: set[str] = set()
    chosen = []
    for rec in records:
        if rec["class"] in seen or len(rec["text"]) > 12_000:
            continue
        seen.add(rec["class"])
        chosen.append({k: rec[k] for k in ("source", "class", "total", "tied", "text")})
        if len(chosen) >= n:
            break
    out.write_text(json.dumps(chosen, indent=1) + "\n", encoding="utf-8")
    print(f"{len(chosen)} printouts, {sum(len(r['text']) for r in chosen):,} characters, in {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=("build", "score", "fixtures"))
    p.add_argument("corpus", type=Path)
    p.add_argument("out", type=Path, nargs="?")
    p.add_argument("n", type=int, nargs="?", default=40)
    p.add_argument("--only", help="comma-separated model types or sources")
    p.add_argument("--show", choices=("wrong", "flagged", "refused", "exact", "all"))
    args = p.parse_args()
    if args.command == "build":
        build(args.corpus, set(args.only.split(",")) if args.only else None)
    elif args.command == "score":
        score(args.corpus, args.show)
    else:
        fixtures(args.corpus, args.out, args.n)


if __name__ == "__main__":
    main()
