"""The fit tables say where a scheme leaves most of a model unquantised."""

from paramcount.cli import main


def test_nf4_on_fused_experts_is_footnoted(capsys):
    # bitsandbytes leaves fused experts in 16 bits: nothing transformers loads fits one H100 (exit 1)
    for argv, code in ((["fit", "mixtral-8x7b"], 0), (["fit", "mixtral-8x7b", "--gpu", "h100"], 1)):
        assert main([*argv, "--width", "200"]) == code
        out = capsys.readouterr().out
        assert "nf4: 45,360,615,424 of 46,702,792,704 parameters (97.1%) stay unquantised" in out
        assert "experts" in out.split("stay unquantised")[1].splitlines()[0]


def test_a_dense_model_has_no_such_footnote(capsys):
    assert main(["fit", "llama-2-7b", "--width", "200"]) == 0
    assert "stay unquantised" not in capsys.readouterr().out
