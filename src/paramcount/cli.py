"""The command line: parse, make one library call, render. Errors become one line, exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from .errors import ParamcountError

EXAMPLES = """\
examples:
  paramcount                                 the bundled default (bert-base-chinese)
  paramcount bert-base-uncased               a catalog model (hub id or short name)
  paramcount path/to/config.json             a config file, or a model folder holding one
  paramcount meta-llama/Llama-3.1-8B --class base --tree 3
  paramcount Qwen/Qwen2.5-7B --class Qwen2ForSequenceClassification --num-labels 3 --json
  paramcount --arch gpt2 --layers 96 --hidden 12288 --heads 96 --vocab 50257 --context 2048
  paramcount list                            the catalog with totals
"""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        self.exit(2, f"paramcount: error: {message}\n")


def count_parser() -> Parser:
    p = Parser(
        prog="paramcount",
        description="Exact parameter counts of Transformer models, with where they live.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", nargs="?", help="catalog name, config.json, or model folder (default: bert-base-chinese)")
    p.add_argument(
        "--class", dest="model_class", metavar="NAME", help="transformers class name, or 'base' for the backbone"
    )
    p.add_argument("--num-labels", type=int, metavar="N", help="labels for ...ForSequenceClassification and the like")
    p.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE", help="override a config field (repeatable)"
    )
    p.add_argument("--json", action="store_true", help="print the versioned JSON document instead of tables")
    p.add_argument("--tree", type=int, default=0, metavar="DEPTH", help="show the module tree to this depth")
    p.add_argument("--width", type=int, help="terminal width for the tables")
    p.add_argument("--version", action="version", version=f"paramcount {__version__}")
    dims = p.add_argument_group("plain dimensions (a model that does not exist yet)")
    dims.add_argument("--arch", metavar="MODEL_TYPE", help="the family, e.g. gpt2, llama, bert")
    for flag, field in (
        ("layers", "num_hidden_layers"),
        ("hidden", "hidden_size"),
        ("heads", "num_attention_heads"),
        ("kv-heads", "num_key_value_heads"),
        ("head-dim", "head_dim"),
        ("intermediate", "intermediate_size"),
        ("vocab", "vocab_size"),
        ("context", "max_position_embeddings"),
    ):
        dims.add_argument(f"--{flag}", type=int, metavar="N", help=f"sets {field}")
    return p


def run_count(argv: Sequence[str]) -> int:
    from . import load
    from .frontends import catalog, dims
    from .frontends.config import from_config

    args = count_parser().parse_args(argv)
    extra = dims.parse_set(args.set)
    flags = {k: getattr(args, k) for k in dims.FLAGS}
    if args.arch:
        if args.model:
            raise ParamcountError("give a model or --arch, not both", field="--arch")
        fields = dims.config(args.arch, flags, extra)
        model = from_config(
            {"model_type": fields.pop("model_type")},
            f"--arch {args.arch}",
            model_class=args.model_class,
            num_labels=args.num_labels,
            overrides=fields,
        )
    else:
        if any(v is not None for v in flags.values()):
            raise ParamcountError("dimension flags need --arch (or use --set FIELD=VALUE)", field="--arch")
        model = load(args.model or catalog.DEFAULT, args.model_class, args.num_labels, extra or None)
    return show(model, args)


def show(model, args: argparse.Namespace) -> int:
    if args.json:
        from .render.json import dumps

        print(dumps(model))
        return 0
    from .render import text

    text.console(args.width).print(text.render(model, args.tree))
    return 0


def run_list(argv: Sequence[str]) -> int:
    from .frontends import catalog
    from .frontends.config import from_config
    from .render import text

    p = Parser(prog="paramcount list", description="The bundled catalog with totals.")
    p.add_argument("--width", type=int)
    args = p.parse_args(argv)
    rows = []
    for e in catalog.entries():
        m = from_config(e.config, f"catalog:{e.id}", name=e.id)
        rows.append((e.id, m.model_type, m.class_name, m.total, m.backbone_total))
    text.console(args.width).print(text.catalog_table(rows))
    return 0


COMMANDS = {"count": run_count, "list": run_list}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = COMMANDS.get(argv[0]) if argv else None
    try:
        return command(argv[1:]) if command else run_count(argv)
    except ParamcountError as e:
        print(f"paramcount: error: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:  # argparse has already printed its one line
        return e.code if isinstance(e.code, int) else 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
