"""paramcount.from_module: a live nn.Module gives the same tree as its config; ties by identity."""

import pytest

import paramcount
from paramcount.errors import ParamcountError
from paramcount.frontends.module import from_module

from .ckpt import TINY_LLAMA, config_of, torch, transformers

GPT2 = {"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 4, "vocab_size": 100, "n_positions": 64}
BERT = {
    "model_type": "bert",
    "vocab_size": 90,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 40,
}
CASES = [
    (TINY_LLAMA, "LlamaForCausalLM"),
    ({**TINY_LLAMA, "tie_word_embeddings": True}, "LlamaForCausalLM"),
    (GPT2, "GPT2LMHeadModel"),
    (BERT, "BertForMaskedLM"),
    (BERT, "BertModel"),
]


def meta(raw, cls):
    with torch.device("meta"):  # no memory, no weights: shapes are all from_module reads
        return getattr(transformers, cls)(config_of(raw))


def facts(model):
    return {x.name: (tuple(int(d) for d in x.shape), x.tied_to) for x in model.tensors()}


@pytest.mark.parametrize("raw, cls", CASES, ids=[c for _, c in CASES])
def test_same_tree_as_config(raw, cls):
    module = meta(raw, cls)
    ours, theirs = from_module(module), paramcount.load(raw, model_class=cls)
    assert ours.total == theirs.total == sum(p.numel() for p in module.parameters())
    assert facts(ours) == facts(theirs)
    assert ours.components() == theirs.components()
    assert ours.backbone_total == theirs.backbone_total and ours.class_name == cls
    assert ours.ties() == theirs.ties()


def test_exported_from_the_package():
    module = meta(GPT2, "GPT2LMHeadModel")
    assert paramcount.from_module(module).total == from_module(module).total


def test_plain_module_with_a_shared_parameter():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(10, 4)
            self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
            self.head = torch.nn.Linear(4, 10, bias=False)
            self.head.weight = self.embed.weight
            self.register_buffer("mask", torch.ones(8, 8))  # a buffer: never a parameter

    m = from_module(Tied(), name="tied")
    assert m.total == 40 + 20 + 8 == sum(p.numel() for p in Tied().parameters())
    assert m.ties() == [("head.weight", "embed.weight", 40)]
    assert m.total_with_ties == m.total + 40
    assert m.model_type == "module" and m.name == "tied"
    assert {x.name: x.dtype for x in m.tensors() if not x.tied_to}["block.0.weight"] == "F32"


def test_modified_transformers_model_counts_what_is_there():
    module = meta(TINY_LLAMA, "LlamaForCausalLM")
    module.model.layers = module.model.layers[:1]  # pruned after construction: the config no longer says
    m = from_module(module)
    assert m.total == sum(p.numel() for p in module.parameters()) < paramcount.load(TINY_LLAMA).total
    assert m.components()["attention"] > 0 and m.backbone_class == "LlamaModel"


def test_not_a_module():
    with pytest.raises(ParamcountError, match=r"expected a torch\.nn\.Module"):
        from_module({"model_type": "llama"})
