"""Invariants every tree keeps: rows sum to their parent, repeats equal their unrolling."""

from hypothesis import given, settings
from hypothesis import strategies as st

import paramcount
from paramcount.frontends import catalog
from paramcount.ir import Block, Tensor, Tie
from paramcount.model import Model


def sums_to_children(node) -> None:
    if isinstance(node, Block):
        assert node.count == node.copies * sum(c.count for c in node.children)
        for child in node.children:
            sums_to_children(child)
    elif isinstance(node, Tie):
        assert node.count == 0
    else:
        assert isinstance(node, Tensor) and node.count >= 0  # (0, h) when type_vocab_size is 0


def invariants(model: Model) -> None:
    sums_to_children(model.tree)
    assert sum(model.components().values()) == model.total
    leaves = model.tensors()  # unrolled once: DeepSeek-V3's is some 90,000 rows
    assert sum(leaf.count for leaf in leaves if not leaf.tied_to) == model.total
    assert model.total_with_ties == model.total + sum(c for _, _, c in model.ties())
    assert sum(g.count for g in model.layers()) <= model.total
    assert model.active_total <= model.total
    names = [leaf.name for leaf in leaves]
    assert len(names) == len(set(names)), "duplicate tensor names"
    targets = {leaf.name: leaf.shape for leaf in leaves if not leaf.tied_to}
    for name, target, _ in model.ties():
        assert target in targets, f"{name} is tied to {target}, which does not exist"
    ckpt = model.tensors(checkpoint=True)
    assert sum(leaf.count for leaf in ckpt if not leaf.tied_to) == model.total


def test_every_catalog_model_keeps_the_invariants():
    for entry in catalog.entries():
        invariants(paramcount.load(entry.id))
        invariants(paramcount.load(entry.id, model_class="base"))


dims = st.integers(1, 6)


@settings(max_examples=60, deadline=None)
@given(
    layers=dims,
    heads=dims,
    head_dim=dims,
    kv_div=dims,
    inter=st.integers(1, 64),
    vocab=st.integers(1, 500),
    tie=st.booleans(),
    bias=st.booleans(),
)
def test_random_llama(layers, heads, head_dim, kv_div, inter, vocab, tie, bias):
    kv = max(k for k in range(1, heads + 1) if heads % k == 0 and k <= kv_div)
    raw = {
        "model_type": "llama",
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "hidden_size": heads * head_dim,
        "num_key_value_heads": kv,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "tie_word_embeddings": tie,
        "attention_bias": bias,
        "mlp_bias": not bias,
    }
    for cls in ("LlamaModel", "LlamaForCausalLM", "LlamaForSequenceClassification"):
        invariants(paramcount.load(raw, model_class=cls))


@settings(max_examples=40, deadline=None)
@given(
    layers=dims, heads=dims, head_dim=dims, positions=st.integers(1, 300), types=st.integers(0, 3), cross=st.booleans()
)
def test_random_bert_and_gpt2(layers, heads, head_dim, positions, types, cross):
    bert = {
        "model_type": "bert",
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "hidden_size": heads * head_dim,
        "intermediate_size": 4 * heads * head_dim,
        "max_position_embeddings": positions,
        "type_vocab_size": types,
        "is_decoder": cross,
        "add_cross_attention": cross,
    }
    for cls in ("BertModel", "BertForMaskedLM", "BertForPreTraining"):
        invariants(paramcount.load(bert, model_class=cls))
    gpt2 = {
        "model_type": "gpt2",
        "n_layer": layers,
        "n_head": heads,
        "n_embd": heads * head_dim,
        "n_positions": positions,
        "add_cross_attention": cross,
    }
    invariants(paramcount.load(gpt2, model_class="GPT2LMHeadModel"))
