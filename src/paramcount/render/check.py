"""``paramcount check`` and ``paramcount compare`` written out (text, Markdown or LaTeX; en or zh)."""

from __future__ import annotations

from ..check import CheckResult, Convention, Explanation, Step
from ..compare import Comparison
from ..textbook import Textbook
from .doc import Code, Doc, Mark, Math, Num, cell, write
from .labels import KINDS

SLIPS = {
    "en": {
        "pooler": "without the pooler",
        "tied_head_twice": "with the tied output head counted twice",
        "biases": "without the biases",
        "norms": "without the norms (LayerNorm/RMSNorm)",
        "embedding_norm": "without the embedding LayerNorm",
        "final_norm": "without the final norm",
        "layer_norms": "without the norms inside the layers",
        "rms_as_layernorm": "with each RMSNorm counted as a LayerNorm (weight and bias)",
        "segment_omitted": "without the segment embeddings",
        "position_omitted": "without the position embeddings",
        "tied_embeddings_twice": "with the shared (tied) embeddings counted again",
        "gate_omitted": "without the gate projections (a gated feed-forward has three matrices, not two)",
        "router": "without the router",
        "experts_active": "counting only the {k} active experts of {n}",
        "experts_all": "counting all {n} experts, not the {k} active per token",
        "experts_as_models": "taken as {n} whole models, one per expert ({n} × the dense model with one expert)",
        "one_head": "with Q, K and V counted for one head, not all {a} (the per-head form not multiplied by the heads)",
        "ffn_4h": "with the feed-forward size taken as 4h = {four_h:,}",
        "kv_heads": "with as many key/value heads as query heads ({a}, not {a_kv})",
        "positions_counted": "with position embeddings counted (P·h, P = {P:,}) that are not parameters here",
        "segment_added": "with segment embeddings it does not have (2·h)",
    },
    "zh": {
        "pooler": "漏算了池化层 (pooler)",
        "tied_head_twice": "把与词嵌入共享权重的输出层 (lm_head) 重复计算了一次",
        "biases": "漏算了偏置 (bias)",
        "norms": "漏算了所有归一化层 (LayerNorm/RMSNorm)",
        "embedding_norm": "漏算了嵌入层的层归一化 (LayerNorm)",
        "final_norm": "漏算了最后的归一化层",
        "layer_norms": "漏算了各层内的归一化层",
        "rms_as_layernorm": "把 RMSNorm 当成了带偏置的 LayerNorm",
        "segment_omitted": "漏算了句子/段嵌入 (segment embedding)",
        "position_omitted": "漏算了位置嵌入 (position embedding)",
        "tied_embeddings_twice": "把共享的嵌入矩阵重复计算了",
        "gate_omitted": "漏算了门控前馈层的 gate 投影（门控 FFN 有三个矩阵）",
        "router": "漏算了路由器 (router)",
        "experts_active": "只算了每个 token 激活的 {k} 个专家（共 {n} 个）",
        "experts_all": "算了全部 {n} 个专家，而不是每个 token 激活的 {k} 个",
        "experts_as_models": "把模型当成了 {n} 个完整模型，每个专家一个（{n} × 只含一个专家的稠密模型）",
        "one_head": "只算了一个注意力头的 Q、K、V（按单头公式计算，漏乘头数 {a}）",
        "ffn_4h": "把前馈层维度当成了 4h = {four_h:,}",
        "kv_heads": "把键/值头数当成了查询头数（{a}，实际为 {a_kv}）",
        "positions_counted": "把没有参数的位置编码当成了位置嵌入 (P·h，P = {P:,})",
        "segment_added": "多算了并不存在的句子/段嵌入 (2·h)",
    },
}

# The figures model cards give (check.Convention): the parameters all, or active per token, with
# or without the embedding lookups and the unembedding.
CONVENTIONS = {
    "en": {
        "": "all parameters",
        "active_": "parameters active per token",
        "no_lookup": " without the embedding lookups",
        "no_unembedding": " without the unembedding",
        "non_embedding": " without the embedding lookups and the unembedding",
        "size": " ({:,})",
        "shared_no_lookup": "; the tied table counted as the unembedding",
        "shared_no_unembedding": "; the tied table counted as the embedding lookup",
    },
    "zh": {
        "": "全部参数",
        "active_": "每个 token 激活的参数",
        "no_lookup": "，不含嵌入查找表",
        "no_unembedding": "，不含输出层的反嵌入矩阵",
        "non_embedding": "，不含嵌入查找表与反嵌入矩阵",
        "size": "（{:,}）",
        "shared_no_lookup": "；共享的词表矩阵算作反嵌入",
        "shared_no_unembedding": "；共享的词表矩阵算作嵌入查找表",
    },
}

# The counts textbooks and courses teach (paramcount.textbook): what each one counts.
TEXTBOOK = {
    "en": {
        "12Lh2": "the 12·L·h² rule (4h² attention + 8h² feed-forward per layer; Kaplan et al.'s "
        "N ≈ 12·n_layer·d_model²)",
        "12Lh2_Vh": "the 12·L·h² rule with the token table (V·h), as GPT-3's 175B is checked",
        "12Lh2_VPh": "the 12·L·h² rule with the token and position tables",
        "kaplan_non_embedding": "the non-embedding count (Kaplan et al.: all but the embedding tables and the "
        "unembedding)",
        "non_embedding_with_positions": "the non-embedding count with the position table kept",
        "layer_matrices": "the layers' weight matrices alone (no biases, no norms)",
        "layers": "the repeated layers alone (the encoder or decoder blocks; no embeddings, final norm, pooler or "
        "head)",
        "embeddings": "the embeddings alone (the lookup tables and their norm)",
        "flops_2n_forward": "the forward FLOPs per token (2·N, Kaplan et al.'s C_forward)",
        "flops_6n_training": "the training FLOPs per token (6·N, Kaplan et al.'s C ≈ 6N per token)",
    },
    "zh": {
        "12Lh2": "12·L·h² 经验公式（每层注意力 4h² + 前馈层 8h²；Kaplan 等人的 N ≈ 12·n_layer·d_model²）",
        "12Lh2_Vh": "12·L·h² 加词表矩阵 (V·h)，常用来核对 GPT-3 的 175B",
        "12Lh2_VPh": "12·L·h² 加词表与位置嵌入矩阵",
        "kaplan_non_embedding": "非嵌入参数量（Kaplan 等人：去掉嵌入查找表与反嵌入矩阵）",
        "non_embedding_with_positions": "保留位置嵌入的非嵌入参数量",
        "layer_matrices": "仅各层的权重矩阵（不含偏置与归一化层）",
        "layers": "仅重复的各层（编码器或解码器块；不含嵌入层、最后的归一化层、池化层与输出层）",
        "embeddings": "仅嵌入层（查找表及其归一化层）",
        "flops_2n_forward": "每个 token 前向计算的 FLOPs（2·N）",
        "flops_6n_training": "每个 token 训练的 FLOPs（6·N）",
    },
}

WORDS = {
    "en": {
        "title": "Checking {answer} against {name}",
        "counts": "{cls} has {total} parameters; its backbone {bb} has {bbtotal}.",
        "counts_same": "{cls} has {total} parameters.",
        "active": " (parameters active per token)",
        "exact": "{answer} is exact: the count of {cls}.",
        "rounded": "{answer} is {total} rounded: the count of {cls}.",
        "backbone": "That is the backbone; {cls} as configured has {total}.",
        "explained": "{answer} is not exact. It is explained exactly:",
        "explained_rounded": "{answer} is not the count rounded; it could be:",
        "also": "Also possible:",
        "none": "No combination of up to three common slips gives {answer}.",
        "nearest": "Nearest explanations:",
        "remaining": "remaining difference",
        "and": " and ",
        "exactly": "the exact count",
        "convention": "{answer} is {cls}'s count of {what}.",
        "convention_rounded": "{answer} is {value} rounded: {cls}'s count of {what}.",
        "same": "The same figure is its count of {what}.",
        "also_rounded": "It is also {value} rounded: its count of {what}.",
        "conventions": "What model cards count, and none gives {answer}:",
        "conventions_head": ("count", "parameters", ""),
        "cut": "{answer} cut off, not rounded",
        "taught": "{answer} is {what}: {formula} = {working} = {value}, {diff}.",
        "taught_rounded": "{answer} is {value} rounded, {what}: {formula} = {working}, {diff}.",
        "taught_also": "It is also {what}: {formula} = {value}.",
        "taught_flops": "{answer} is not a parameter count but {what}: {formula} = {working} = {value}.",
        "less": "{n} less than the exact count of {cls} ({total})",
        "more": "{n} more than the exact count of {cls} ({total})",
        "textbook": "What textbooks and courses count, and none gives {answer}:",
        "textbook_head": ("count", "formula", "parameters", "against the exact count"),
    },
    "zh": {
        "title": "核对 {answer}（{name}）",
        "counts": "{cls} 的参数量为 {total}；主干模型 {bb} 为 {bbtotal}。",
        "counts_same": "{cls} 的参数量为 {total}。",
        "active": "（每个 token 激活的参数量）",
        "exact": "{answer} 正确：就是 {cls} 的参数量。",
        "rounded": "{answer} 是 {total} 的近似值：{cls} 的参数量。",
        "backbone": "这是主干模型的参数量；按配置的 {cls} 为 {total}。",
        "explained": "{answer} 不是精确值。差异可以被完全解释：",
        "explained_rounded": "{answer} 不是精确值的近似；可能是：",
        "also": "也可能是：",
        "none": "三种以内的常见错误组合都得不到 {answer}。",
        "nearest": "最接近的解释：",
        "remaining": "剩余差值",
        "and": "，并且",
        "exactly": "精确值",
        "convention": "{answer} 正是 {cls} 的{what}。",
        "convention_rounded": "{answer} 是 {value} 的近似值：{cls} 的{what}。",
        "same": "这也等于它的{what}。",
        "also_rounded": "它也是 {value} 的近似值：{what}。",
        "conventions": "模型说明中常见的几种计法，都不是 {answer}：",
        "conventions_head": ("计法", "参数量", ""),
        "cut": "{answer} 是截断值，不是四舍五入",
        "taught": "{answer} 是{what}：{formula} = {working} = {value}，{diff}。",
        "taught_rounded": "{answer} 是 {value} 的近似值，{what}：{formula} = {working}，{diff}。",
        "taught_also": "它也是{what}：{formula} = {value}。",
        "taught_flops": "{answer} 不是参数量，而是{what}：{formula} = {working} = {value}。",
        "less": "比 {cls} 的精确值（{total}）少 {n}",
        "more": "比 {cls} 的精确值（{total}）多 {n}",
        "textbook": "教科书与课程中常见的几种算法，都不是 {answer}：",
        "textbook_head": ("算法", "公式", "参数量", "与精确值之差"),
    },
}


def phrase(step: Step, lang: str) -> str:
    return SLIPS[lang][step.key].format(**step.info)


def sentence(e: Explanation, answer: str, lang: str, rel: str = "=") -> str:
    """``108,891,648 = BertModel without the pooler (-590,592)``: each slip with the change it
    makes, signed; a rounded answer (``≈``) also says the figure the slips give."""
    parts = [f"{phrase(s, lang)} ({s.change:+,})" for s in e.steps]
    joined = WORDS[lang]["and"].join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)
    said = f"{answer} {rel} {e.value:,} = " if rel != "=" else f"{answer} {rel} "
    cls = named(e.class_name, lang)
    return f"{said}{cls} {joined}" if lang == "en" else f"{said}{cls}，{joined}"


def working(e: Explanation) -> str:
    """``109,482,240 - 590,592 = 108,891,648``."""
    text = f"{e.base_total:,}"
    for s in e.steps:
        text += f" {'+' if s.change >= 0 else '-'} {abs(s.change):,}"
    return f"{text} = {e.value:,}"


def convention(c: Convention, lang: str, sizes: bool = True) -> str:
    """``parameters active per token without the embedding lookups (579,133,440)``; without
    ``sizes``, no figures in parentheses (a table's label)."""
    words = CONVENTIONS[lang]
    prefix, rest = ("active_", c.key[7:]) if c.key.startswith("active_") else ("", c.key)
    if rest == "all":
        return words[prefix]
    said = words[prefix] + words[rest] + (words["size"].format(c.lookup + c.unembedding) if sizes else "")
    return said + (words[f"shared_{rest}"] if c.shared else "")


# A count read from file headers alone names no class: say what was counted (not "the count of GGUF").
HEADER_ONLY = {
    "en": {"checkpoint": "the checkpoint", "GGUF": "the GGUF file"},
    "zh": {"checkpoint": "检查点", "GGUF": "GGUF 文件"},
}


def named(cls: str, lang: str) -> str:
    """The class counted, or what a header-only count counted."""
    return HEADER_ONLY[lang].get(cls, cls)


def _answer(result: CheckResult) -> str:
    a = result.answer
    return f"{int(a.value):,}" if not a.rounded and a.value.denominator == 1 else a.text.strip()


def check_document(result: CheckResult, lang: str = "en") -> Doc:
    w, doc, answer = WORDS[lang], Doc(lang), _answer(result)
    doc.title(w["title"].format(answer=answer, name=result.name))
    same = result.backbone_class == result.class_name or result.class_name in HEADER_ONLY["en"]
    key = "counts_same" if same else "counts"
    cls, total = named(result.class_name, lang), f"{result.total:,}"
    counts = w[key].format(cls=cls, total=total, bb=result.backbone_class, bbtotal=f"{result.backbone_total:,}")
    doc.para(counts[:1].upper() + counts[1:] + (w["active"] if result.active else ""))
    if result.by_convention:
        _convention(doc, result, answer, lang)
        _taught_also(doc, result, lang)
    elif result.exact:
        _exact(doc, result, answer, lang)
    elif result.taught and (result.taught[0].parameters or not result.explanations):  # FLOPs after slips
        _taught(doc, result, answer, lang)
    elif result.explanations:
        _explained(doc, result, answer, lang)
    else:
        _nearest(doc, result, answer, lang)
    if not result.accepted:
        _conventions(doc, result, answer, lang)
    if not result.accepted and not result.explanations:  # what else the answer might have counted
        _textbook(doc, result, answer, lang)
    return doc


def _difference(t: Textbook, cls: str, lang: str) -> str:
    said = WORDS[lang]["less" if t.difference < 0 else "more"]
    return said.format(n=f"{abs(t.difference):,}", cls=cls, total=f"{t.exact:,}")


def _taught(doc: Doc, result: CheckResult, answer: str, lang: str) -> None:
    """The answer is a count that textbooks teach: which, its formula, and how far from exact
    (then the slips that also give it, if any)."""
    w, (first, *others) = WORDS[lang], result.taught
    key = "taught_rounded" if result.answer.rounded else "taught"
    key = key if first.parameters else "taught_flops"
    said = w[key].format(answer=answer, what=TEXTBOOK[lang][first.key], formula=first.formula,
                         working=first.working, value=f"{first.value:,}",
                         diff=_difference(first, named(result.class_name, lang), lang))  # fmt: skip
    doc.para(*((Mark(), " ") if first.parameters else ()), said)
    for t in others:
        doc.para(w["taught_also"].format(what=TEXTBOOK[lang][t.key], formula=t.formula, value=f"{t.value:,}"))
    if result.explanations:
        _explained(doc, result, answer, lang)


def _taught_also(doc: Doc, result: CheckResult, lang: str) -> None:
    for t in result.taught:
        doc.para(WORDS[lang]["taught_also"].format(what=TEXTBOOK[lang][t.key], formula=t.formula,
                                                   value=f"{t.value:,}"))  # fmt: skip


def _textbook(doc: Doc, result: CheckResult, answer: str, lang: str) -> None:
    """Each taught count with its formula and its distance from the exact count."""
    if not result.textbook:
        return
    w = WORDS[lang]
    doc.para(w["textbook"].format(answer=answer))
    rows = [
        [cell(TEXTBOOK[lang][t.key].split(" (")[0].split("（")[0]), cell(Math(t.formula)), cell(Num(t.value)),
         cell(Math(f"{t.difference:+,}"))]
        for t in result.textbook
    ]  # fmt: skip
    doc.table([cell(h) for h in w["textbook_head"]], rows, right=(2, 3))


def _convention(doc: Doc, result: CheckResult, answer: str, lang: str) -> None:
    """The answer is a figure a model card gives: say which (and each other that gives it)."""
    w, (first, *others) = WORDS[lang], result.matched
    key = "convention_rounded" if result.answer.rounded else "convention"
    what = convention(first, lang)
    doc.para(
        Mark(),
        " ",
        w[key].format(answer=answer, value=f"{first.value:,}", cls=named(result.class_name, lang), what=what),
    )
    for before, c in zip(result.matched[:-1], others, strict=True):
        line = w["same"] if c.value == before.value else w["also_rounded"]
        doc.para(line.format(value=f"{c.value:,}", what=convention(c, lang)))


def _conventions(doc: Doc, result: CheckResult, answer: str, lang: str) -> None:
    """Each convention's figure, when the answer is none of them (a figure cut off where it
    should be rounded is marked)."""
    w = WORDS[lang]
    doc.para(w["conventions"].format(answer=answer))
    rows = [
        [
            cell(convention(c, lang, sizes=False)),
            cell(Num(c.value)),
            cell(w["cut"].format(answer=answer) if result.answer.truncates(c.value) else ""),
        ]
        for c in result.conventions
    ]
    doc.table([cell(h) for h in w["conventions_head"]], rows, right=(1,))


def _exact(doc: Doc, result: CheckResult, answer: str, lang: str) -> None:
    w = WORDS[lang]
    best = result.explanations[0]
    key = "rounded" if result.answer.rounded else "exact"
    doc.para(Mark(), " ", w[key].format(answer=answer, cls=named(best.class_name, lang), total=f"{best.value:,}"))
    if best.backbone:
        doc.para(w["backbone"].format(cls=result.class_name, total=f"{result.total:,}"))


def _explained(doc: Doc, result: CheckResult, answer: str, lang: str) -> None:
    w = WORDS[lang]
    doc.para(w["explained_rounded" if result.answer.rounded else "explained"].format(answer=answer))
    first, *others = result.explanations
    rel = "≈" if result.answer.rounded else "="
    doc.para(sentence(first, answer, lang, rel))
    doc.para(Math(working(first)), *(("  ", Mark()) if rel == "=" else ()))
    if others:
        doc.para(w["also"])
        for e in others:
            doc.para("- ", sentence(e, answer, lang, rel), "  (", Math(working(e)), ")")


def _nearest(doc: Doc, result: CheckResult, answer: str, lang: str) -> None:
    w = WORDS[lang]
    doc.para(w["none"].format(answer=answer))
    doc.para(w["nearest"])
    for e in result.nearest:
        rest = int(e.remaining(result.answer))
        what = (
            sentence(e, f"{e.value:,}", lang)
            if e.steps
            else f"{e.value:,} = {named(e.class_name, lang)} ({w['exactly']})"
        )
        doc.para("- ", what, f"; {w['remaining']} ", Math(f"{rest:+,}"))


def render_check(result: CheckResult, fmt: str = "text", lang: str = "en", columns: int | None = None) -> str:
    return write(check_document(result, lang), fmt, columns)


# ---- compare -----------------------------------------------------------------------------------

COMPARE = {
    "en": {
        "title": "Comparing {n} models",
        "component": "component",
        "total": "total",
        "backbone": "backbone",
        "active": "active per token",
        "layers": "layers",
        "diff": "{b} − {a}",
        "symbols": "config symbols",
        "unsymbolic": "; not exact but the totals: components and layers read from tensor names ({why})",
    },
    "zh": {
        "title": "比较 {n} 个模型",
        "component": "组成部分",
        "total": "总参数量",
        "backbone": "主干模型",
        "active": "每个 token 激活",
        "layers": "层数",
        "diff": "{b} − {a}",
        "symbols": "配置符号",
        "unsymbolic": "；除总数外均非精确：组成部分和层数取自张量名称（{why}）",
    },
}


def _value(v: int | None) -> tuple:
    return cell(Num(v)) if v is not None else cell("—")


def _diff(a: int | None, b: int | None) -> tuple:
    if a is None and b is None:
        return cell("")
    d = (b or 0) - (a or 0)
    return cell(Math(f"{d:+,}" if d else "0"))


def _sym_diff(a: int | None, b: int | None) -> tuple:
    """A symbol one model does not use has no difference to show."""
    return cell("") if a is None or b is None else _diff(a, b)


def compare_document(c: Comparison, lang: str = "en") -> Doc:
    w, k, doc = COMPARE[lang], KINDS[lang], Doc(lang)
    doc.title(w["title"].format(n=len(c.names)))
    short = [f"#{i + 1}" for i in range(len(c.names))]
    for i, (s, name, cls) in enumerate(zip(short, c.names, c.classes, strict=True)):
        why = c.unsymbolic[i] if c.unsymbolic else None
        doc.para(f"{s}: ", Code(name), f" ({cls})", *([w["unsymbolic"].format(why=why)] if why else []))
    header = [cell(w["component"]), *(cell(s) for s in short)]
    header += [cell(w["diff"].format(a=short[0], b=s)) for s in short[1:]]
    rows = []
    for label, values in _rows(c, w, k):
        rows.append([cell(label), *(_value(v) for v in values), *(_diff(values[0], v) for v in values[1:])])
    right = tuple(range(1, len(header)))
    doc.table(header, rows, right=right, strong=(len(c.kinds),))
    if c.symbols:
        doc.heading(w["symbols"])
        sym_rows = [
            [cell(Math(s)), *(_value(v) for v in vals), *(_sym_diff(vals[0], v) for v in vals[1:])]
            for s, vals in c.symbols.items()
        ]
        doc.table([cell(""), *header[1:]], sym_rows, right=right)
    return doc


def _rows(c: Comparison, w: dict, k: dict):
    for kind in c.kinds:
        yield k.get(kind, kind), [comp.get(kind) for comp in c.components]
    yield w["total"], list(c.totals)
    yield w["backbone"], list(c.backbone_totals)
    if any(a != t for a, t in zip(c.active, c.totals, strict=True)):
        yield w["active"], list(c.active)
    yield w["layers"], list(c.layers)


def render_compare(c: Comparison, fmt: str = "text", lang: str = "en", columns: int | None = None) -> str:
    return write(compare_document(c, lang), fmt, columns)
