"""paramcount.pattern: std::regex's ECMAScript syntax matched in time linear in the text (issue 32 item 1).

Held to Python's re on the syntax both read alike (hypothesis), to llama.cpp's own -ot patterns,
and to a bound on its work: the patterns that froze the server under re finish in at most
(text length + 1) x (NFA states) steps. No test times anything."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from paramcount import pattern
from paramcount.pattern import Budget, Pattern, PatternError, budget

NAMES = (
    "token_embd.weight",
    "output.weight",
    "blk.0.attn_q.weight",
    "blk.5.ffn_up_exps.weight",
    "blk.15.ffn_gate_exps.weight",
    "blk.23.ffn_down_exps.weight",
    "blk.35.ffn_down_shexp.weight",
    "blk.61.ffn_gate_up_chexps.weight",
    "blk.123.ffn_up_exps.weight",
)
LLAMA_CPP = (  # -ot patterns from llama.cpp's docs, its common/common.h and its users' issues
    "exps",
    r"\.ffn_(up|down|gate|gate_up)_(ch|)exps",  # LLM_FFN_EXPS_REGEX (--cpu-moe)
    r"blk\.5\.ffn_(up|down|gate|gate_up)_(ch|)exps",  # --n-cpu-moe 6's last
    r"blk\.\d+\.ffn_.*_exps",
    r"\.(1[0-9]|2[0-9])\.ffn_.*",
    r"\.(6|7|8|9|[0-9][0-9]|[0-9][0-9][0-9])\.ffn_(gate|up|down)_exps.",
    r"blk\.(0|1|2|3)\.ffn_.*",
    r"^blk\.[0-9]{2}\.",
    r"ffn_.*_exps\.weight$",
    r"token_embd",
    r"attn_q\.weight",
)


@pytest.mark.parametrize("source", LLAMA_CPP)
def test_llama_cpp_patterns_choose_the_tensors_re_chooses(source):
    p = pattern.compile(source)
    assert [p.search(n) for n in NAMES] == [bool(re.search(source, n)) for n in NAMES]


FREEZING = (".*" * 12 + "Z", "(.|.)*Z", r"(\w|\w)*Z", "((a+))+$", "(.*)*" * 14 + "Z", "(a|aa)+$", "(x+x+)+y")


@pytest.mark.parametrize("source", FREEZING)
def test_patterns_that_froze_the_server_take_linear_work(source):
    """Each ran for seconds to minutes under re on a few dozen characters; here the work is
    counted (NFA states visited while building DFA states) and bounded by the text's length."""
    p = Pattern(source)
    for text in ("a" * 5000 + "!", "blk.1.ffn_up_exps.weight" * 200 + "Z"):
        before = p.work
        assert p.search(text) == (source.endswith("Z") and text.endswith("Z"))
        assert p.work - before <= (len(text) + 1) * p.states()


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("(?s:.)*" * 14, "(?s... is Python syntax"),
        ("(?P<x>a)", "(?P... is Python syntax"),
        ("(?i)exps", "(?i... is Python syntax"),
        ("(?<=a)b", "lookbehind (?<= is not ECMAScript"),
        ("(?=a)", "lookahead (?= needs a backtracking matcher"),
        ("(?!a)", "lookahead (?! needs a backtracking matcher"),
        (r"(a)\1", r"backreference \1 needs a backtracking matcher"),
        (r"[\1]", "backreference"),
        ("(a", "unbalanced (: missing )"),
        ("a)", "unbalanced )"),
        ("[ab", "unbalanced [: missing ]"),
        ("*a", "nothing to repeat"),
        ("a**", "nothing to repeat"),
        ("^*", "an assertion cannot be repeated"),
        (r"\b+", "an assertion cannot be repeated"),
        ("a{", "{ begins no {n}"),
        ("{2}", "nothing to repeat"),
        ("a{3,2}", "{3,2} counts down"),
        ("a{4294967296}", "expands to 4,294,967,296 states; at most 2,000"),
        ("(a{1000}){1000}", "expands to 1,000,000 states"),
        ("((a{99}){99}){99}", "expands to 970,299 states"),
        ("a{" + "9" * 200 + "}", "expands to about 10^199 states"),
        (r"\A", r"\A is no ECMAScript escape"),
        (r"\z", r"\z is no ECMAScript escape"),
        ("a\\", "\\ at the end"),
        (r"\x4", r"\x wants 2 hexadecimal digits"),
        (r"\cC", r"\cX reads differently in std::regex's libraries"),
        (r"\u00e9", "past ASCII"),
        ("[z-a]", "a range runs backwards"),
        (r"[\d-z]", "a range needs one character at each end"),
        ("[[:alfa:]]", "no character class [:alfa:]"),
        ("[[.a.]]", "collating [.a.] is not supported"),
        ("(" * 40 + ")" * 40, "groups nest more than 32 deep"),
    ],
)
def test_refusals_say_why_in_one_line(source, said):
    with pytest.raises(PatternError) as e:
        Pattern(source)
    assert said in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("source", "text", "found"),
    [
        ("a.c", "a\nc", False),  # . is no line terminator
        ("a.c", "a\rc", False),
        ("a.c", "a\tc", True),
        ("[^x]", "\n", True),  # a negated class takes one
        ("x$", "x\n", False),  # $ is the end (Python's re also takes the place before a final \n)
        ("^b", "ab", False),
        ("a|^b", "ab", True),
        (r"\bexps\b", "up_exps", False),  # _ is a word character
        (r"\bexps\b", "up.exps.w", True),
        (r"\Bxp", "exps", True),
        (r"[\b]", "\b", True),  # backspace inside a class
        (r"\x41\u0042\x03\0", "AB\x03\x00", True),
        (r"\01", "\x001", True),  # \0 then the digit 1, as libstdc++ reads it
        (r"[[:digit:]][[:upper:]]", "x9Q", True),
        (r"\d\s\w", "1 _", True),
        ("é", "café", True),  # UTF-8 bytes, as std::regex over std::string sees them
        ("caf.$", "café", False),  # é is two bytes, . one
        ("caf..$", "café", True),
        ("[é]", "\xc3", True),  # a class of é's two bytes
        ("a]}", "a]}", True),  # ] and } alone are characters (libstdc++)
        ("", "anything", True),
        ("[]", "anything", False),  # ECMAScript's empty class
        ("[^]", "x", True),
        ("(?:)*x", "x", True),
        ("(){4294967296}x", "x", True),  # an empty body matches once for all its repeats
        ("a{2,3}?b", "aab", True),
        ("a{3,}b", "aab", False),
    ],
)
def test_ecmascript_semantics(source, text, found):
    assert Pattern(source).search(text) is found


# ---- held to Python's re where the two read a pattern alike ------------------------------------

SIMPLE = ["a", "b", "_", "0", r"\.", "-", " ", ".", r"\d", r"\w", r"\s", r"\D", r"\W", r"\S"]
ATOMS = st.sampled_from([*SIMPLE, "[ab]", "[^a0]", "[a-c_]", r"[\d.]", "[.-]", r"[^\s]"])
QUANT = st.sampled_from(["", "*", "+", "?", "{2}", "{1,}", "{0,2}", "*?", "+?", "??", "{1,3}?"])
ANCHORS = st.sampled_from(["^", "$", r"\b", r"\B"])
PATTERNS = st.recursive(
    st.one_of(ATOMS, ANCHORS),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=4).map("".join),
        st.tuples(inner, inner).map("|".join),
        st.tuples(st.sampled_from(["(", "(?:"]), inner, QUANT).map(lambda t: f"{t[0]}{t[1]}){t[2]}"),
        st.tuples(ATOMS, QUANT).map("".join),
    ),
    max_leaves=8,
)
TEXTS = st.text(alphabet="ab_.-0 \t", max_size=12)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERNS, st.lists(TEXTS, min_size=1, max_size=4))
def test_agrees_with_python_re(source, texts):
    try:
        expected = re.compile(source, re.ASCII)
    except re.error:
        assume(False)
    ours, whole = Pattern(source), Pattern(source, whole=True)
    for text in texts:
        if text == "" and r"\B" in source:
            continue  # Python's \B never matches an empty text; ECMAScript's does (no boundary there)
        assert ours.search(text) == bool(expected.search(text)), (source, text)
        assert whole.search(text) == bool(expected.fullmatch(text)), (source, text)


@pytest.mark.parametrize("source", [r"(a|b)*a(a|b){6}", r"ba(a|b)*a(a|b){5}", r"^ab(a|b)*a(a|b){4}$"])
def test_a_full_dfa_cache_starts_again_with_the_same_answers(monkeypatch, source):
    """2^7 DFA states: the cache empties many times, also while it walks a prefix (ba, ab)."""
    monkeypatch.setattr(pattern, "MAX_CELLS", 64)
    p, expected = Pattern(source), re.compile(source)
    texts = [format(i, "012b").replace("0", "a").replace("1", "b") for i in range(0, 4096, 7)]
    assert [p.search(t) for t in texts] == [bool(expected.search(t)) for t in texts]
    assert p._cells <= 64 + len(p._cores[-1][0]) + p._n


def test_a_budget_bounds_the_work_of_many_searches():
    p = Pattern(r"(a|b)*a(a|b){12}c")  # 2^13 DFA states, none matching: "c" comes first
    texts = ["c" + format(i * 2654435761 % 2**20, "020b").replace("0", "a").replace("1", "b") for i in range(2000)]
    with pytest.raises(Budget), budget(10_000):
        for text in texts:
            p.search(text)
    assert p.work < 10_000 + p.states()  # stopped at the budget, not at the end
    assert Pattern("exps").search("blk.0.ffn_up_exps.weight")  # no budget outside the block
