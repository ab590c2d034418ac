"""One recommendation per runtime (paramcount.advise): the scheme and context fit's table shows,
and a command that, fed back to ``paramcount memory`` with its own flags, gives the same bytes."""

from __future__ import annotations

import json
import shlex

import pytest

from paramcount import load
from paramcount.advise import llamacpp as advise_llamacpp
from paramcount.advise import recommend
from paramcount.cli import main
from paramcount.errors import ParamcountError
from paramcount.memory.fit import fit

GIB = 1 << 30


def memory_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    main(["memory", *argv, "--json"])
    return json.loads(capsys.readouterr().out)


def llama_flags(command: str) -> list[str]:
    """The memory flags of a llama-server line: everything after -m FILE."""
    words = shlex.split(command)
    assert words[:2] == ["llama-server", "-m"]
    return words[3:]


@pytest.mark.parametrize(
    "name, card, ram",
    [("meta-llama/Llama-3.1-8B", "rtx3060", 32 * GIB), ("Qwen/Qwen3-0.6B", "rtx4090", 16 * GIB)],
)
def test_llamacpp_whole_gpu_round_trips(capsys, name, card, ram):
    (r,) = recommend(load(name), card, ram=ram, runtimes=["llama.cpp"])
    assert r.fits and r.placement == "gpu" and "\n" not in r.command
    table = fit(load(name), card, runtime="llama.cpp", only=(r.scheme,)).row(r.scheme)
    assert r.context == table.max_context  # one figure: the table's
    back = memory_json(capsys, [name, "--runtime", "llama.cpp", "--dtype", r.scheme, *llama_flags(r.command)])
    assert back["total"]["bytes"] == r.gpu_bytes


def test_moe_offloads_experts_in_a_short_command(capsys):
    """Qwen3-30B-A3B at q8_0 on a 4090 with 64 GB of RAM: --n-cpu-moe, not a page of -ot."""
    model = load("Qwen/Qwen3-30B-A3B")
    (r,) = recommend(model, "rtx4090", ram=64 * 10**9, runtimes=["llama.cpp"], schemes={"llama.cpp": ["q8_0"]})
    assert r.fits and r.placement == "offload"
    assert "--n-cpu-moe" in r.command and "-ot" not in r.command and len(r.command) < 120
    back = memory_json(
        capsys, ["Qwen/Qwen3-30B-A3B", "--runtime", "llama.cpp", "--dtype", "q8_0", *llama_flags(r.command)]
    )
    assert back["total"]["bytes"] == r.gpu_bytes and back["host"]["bytes"] == r.host_bytes
    n = int(r.command.split("--n-cpu-moe ")[1].split()[0])
    fewer = advise_llamacpp._planner(model, "q8_0").placed(
        advise_llamacpp.placement(gpu_layers=49, overrides=advise_llamacpp.n_cpu_moe(n - 1))
    )
    assert fewer.total(4096, 1) > fit(model, "rtx4090", runtime="llama.cpp", only=("q8_0",)).row("q8_0").capacity


def test_host_ram_limits_offload():
    """The same offload does not fit 8 GB of RAM: the host part (the experts) is checked."""
    model = load("Qwen/Qwen3-30B-A3B")
    (r,) = recommend(model, "rtx4090", ram=8 * 10**9, runtimes=["llama.cpp"], schemes={"llama.cpp": ["q8_0"]})
    assert not r.fits and r.command is None and "within 7.5 GiB of RAM" in r.why


def test_dense_offload_keeps_the_last_layers_on_the_gpu(capsys):
    model = load("meta-llama/Llama-2-13b-hf")
    r = advise_llamacpp.advise(model, "rtx3060", 64 * GIB, 4096, ("q8_0",))
    assert r.fits and r.placement == "offload" and "--n-cpu-moe" not in r.command
    back = memory_json(
        capsys, ["meta-llama/Llama-2-13b-hf", "--runtime", "llama.cpp", "--dtype", "q8_0", *llama_flags(r.command)]
    )
    assert back["total"]["bytes"] == r.gpu_bytes


def test_vllm_stays_on_one_card(capsys):
    """No -tp 2 for a single card: a model that needs two says it does not fit."""
    (r,) = recommend(load("meta-llama/Llama-3.1-8B"), "rtx3060", runtimes=["vllm"])
    assert not r.fits and r.command is None
    (r,) = recommend(load("Qwen/Qwen3-0.6B"), "rtx3060", runtimes=["vllm"])
    assert r.fits and "--tensor-parallel-size" not in r.command
    words = shlex.split(r.command)
    assert words[:3] == ["vllm", "serve", "Qwen/Qwen3-0.6B"]
    back = memory_json(capsys, ["Qwen/Qwen3-0.6B", "--runtime", "vllm", "--gpu", "rtx3060", *words[3:]])
    assert back["total"]["bytes"] == r.gpu_bytes


def test_vllm_fp8_is_quantised_at_load(capsys):
    (r,) = recommend(load("Qwen/Qwen3-8B"), "rtx4090", runtimes=["vllm"], schemes={"vllm": ["fp8"]})
    assert r.fits and "--quantization fp8" in r.command
    words = shlex.split(r.command)
    back = memory_json(capsys, ["Qwen/Qwen3-8B", "--runtime", "vllm", "--gpu", "rtx4090", *words[3:]])
    assert back["total"]["bytes"] == r.gpu_bytes


def test_transformers_falls_back_to_bitsandbytes():
    (r,) = recommend(load("meta-llama/Llama-3.1-8B"), "rtx3060", runtimes=["transformers"])
    assert r.scheme == "bnb-int8" and "BitsAndBytesConfig(load_in_8bit=True)" in r.command
    assert r.command.startswith('python -c "from transformers import LlamaForCausalLM, BitsAndBytesConfig;')
    table = fit(load("meta-llama/Llama-3.1-8B"), "rtx3060", only=("bnb-int8",)).row("bnb-int8")
    assert r.context == table.max_context


def test_a_gguf_file_is_llamacpp_alone():
    from pathlib import Path

    tiny = Path(__file__).parent / "fixtures" / "tiny-llama.gguf"
    (r,) = recommend(load(str(tiny)), "rtx3060", ram=8 * GIB)
    assert r.runtime == "llama.cpp" and f"-m {tiny}" in r.command


def test_unknown_runtime_is_one_line():
    with pytest.raises(ParamcountError, match="no recommendation for runtime"):
        recommend(load("Qwen/Qwen3-0.6B"), "rtx3060", runtimes=["tensorrt"])


def test_ctx_size_is_per_sequence_times_parallel(capsys):
    a = memory_json(capsys, ["Qwen/Qwen3-0.6B", "--runtime", "llama.cpp", "-c", "8192", "-np", "2"])
    b = memory_json(capsys, ["Qwen/Qwen3-0.6B", "--runtime", "llama.cpp", "--context", "4096", "--parallel", "2"])
    assert a["total"] == b["total"]
    capsys.readouterr()
    assert main(["memory", "Qwen/Qwen3-0.6B", "--runtime", "llama.cpp", "-c", "8193", "-np", "2"]) == 2
    assert "not a multiple of -np 2" in capsys.readouterr().err


def test_image_text_models_are_recommended_text_only(capsys):
    """gemma-3-4b-it: llama-server -m loads no mmproj; the command says --no-mmproj and round-trips,
    and the plan without the vision tower is that much smaller."""
    model = load("google/gemma-3-4b-it")
    (r,) = recommend(model, "rtx3060", ram=16 * GIB, runtimes=["llama.cpp"])
    assert "--no-mmproj" in r.command and "text only" in r.why
    flags = llama_flags(r.command)
    back = memory_json(capsys, ["google/gemma-3-4b-it", "--runtime", "llama.cpp", "--dtype", r.scheme, *flags])
    assert back["total"]["bytes"] == r.gpu_bytes
    with_tower = memory_json(capsys, ["google/gemma-3-4b-it", "--runtime", "llama.cpp", "--dtype", "q4_k_m"])
    text = memory_json(capsys, ["google/gemma-3-4b-it", "--runtime", "llama.cpp", "--dtype", "q4_k_m", "--no-mmproj"])
    tower = with_tower["terms"][0]["bytes"] - text["terms"][0]["bytes"]
    # the tower's BF16 (822,140,928 B), F16 (5,898,240) and F32 (23,186,880) tensors and their padding
    assert tower == 851_227_776


def test_ollama_recommends_the_longest_num_ctx_its_estimate_offloads_whole(tmp_path, monkeypatch, capsys):
    """A model in Ollama's store: num_ctx as long as Ollama's own estimate keeps every layer on the
    GPU, at least the modelfile's; the one-line API call that loads it so; llama.cpp beside it."""
    from paramcount.frontends import stores
    from paramcount.memory.runtimes.ollama import Asked, estimate_plan

    from .test_ollama import SPEC, store, write

    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    blob = write(SPEC, tmp_path / "m.gguf").read_bytes()
    store(tmp_path, monkeypatch, (stores.MODEL, blob), (stores.PARAMS, b'{"num_ctx": 2048}'))
    model = load("ollama:tiny:1b")
    ollama, llama = recommend(model, "1GB", ram=8 * GIB)
    assert (ollama.runtime, llama.runtime) == ("ollama", "llama.cpp")
    assert llama.scheme == "stored" and "/blobs/sha256-" in llama.command  # the blob is the GGUF file
    assert ollama.fits and ollama.context >= 2048 and '"num_ctx":' in ollama.command
    assert ollama.command.startswith("curl http://localhost:11434/api/generate -d ")
    at = estimate_plan(model, load_gpu("1GB"), Asked(context=ollama.context))
    assert at.num_gpu == at.layers_model
    if ollama.context < 8192:  # the trained context caps it; else one token more overflows
        beyond = estimate_plan(model, load_gpu("1GB"), Asked(context=ollama.context + 1))
        assert beyond.num_gpu < beyond.layers_model


def load_gpu(name: str):
    from paramcount.memory.core.gpus import gpu

    return gpu(name)


def test_recommendations_carry_the_speed_model_s_figures():
    """Decode, prefill and TTFT from paramcount.memory.speed for the chosen settings: an estimate
    with its expected error where llama.cpp's factors were fitted, a labelled bound for
    transformers, and why there is none for a bare size or weights in RAM on an unnamed CPU."""
    from paramcount.memory.speed import speed

    model = load("meta-llama/Llama-3.1-8B")
    llama, _, hf = recommend(model, "rtx3060", ram=32 * GIB)
    same = speed(model, ["rtx3060"], "llama.cpp", "q8_0", 4096, 512, flash_attn="on", gpu_layers=33).to_dict()
    assert llama.speed["decode"]["value"] == same["decode_tokens_per_s"]
    assert llama.speed["decode"]["label"] == "estimate" and llama.speed["decode"]["expected_error"]["p90"] > 0
    assert hf.speed["decode"]["label"] == "upper bound"
    from paramcount.render.advice import speed_words

    said = speed_words(hf.speed)  # transformers: bounds only, each on its side
    assert "decode ≤" in said and "first token in ≥" in said and "≈" not in said, said
    assert "first token in ≈" in speed_words(llama.speed)  # an estimate
    (sized,) = recommend(model, "12GiB", ram=32 * GIB, runtimes=["llama.cpp"])
    assert "not a card of the catalog" in sized.speed["unavailable"]
    moe = load("Qwen/Qwen3-30B-A3B")
    kw = {"ram": 64 * 10**9, "runtimes": ["llama.cpp"], "schemes": {"llama.cpp": ["q8_0"]}}
    (blind,) = recommend(moe, "rtx4090", **kw)
    assert "name the host's CPU" in blind.speed["unavailable"]
    (seen,) = recommend(moe, "rtx4090", cpu="Ryzen 9 7950X", **kw)
    assert seen.speed["decode"]["value"] < llama.speed["decode"]["value"] * 10  # a figure, from the host's bandwidth
    assert seen.speed["decode"]["label"] == "estimate"


def test_host_ram_limits_a_70b_offload():
    """Llama-3.1-70B on a 4090: q4_k_m with 36 of 81 layers in RAM needs ~19.7 GB of host memory;
    with 16 GB the recommendation drops to a smaller type whose host part fits (q2_k needs ~0.4 GB
    there), with 100 MB to none."""
    model = load("meta-llama/Llama-3.1-70B")
    (roomy,) = recommend(model, "rtx4090", ram=32 * 10**9, runtimes=["llama.cpp"])
    assert roomy.scheme == "q4_k_m" and roomy.placement == "offload" and 16 * 10**9 < roomy.host_bytes <= 32 * 10**9
    (tight,) = recommend(model, "rtx4090", ram=16 * 10**9, runtimes=["llama.cpp"])
    assert tight.fits and tight.scheme != "q4_k_m" and tight.host_bytes <= 16 * 10**9
    (none,) = recommend(model, "rtx4090", ram=10**8, runtimes=["llama.cpp"])
    assert not none.fits and none.command is None


def test_an_apple_chip_gets_llamacpp_and_mlx(capsys):
    """On a Mac: llama.cpp and mlx-lm (vLLM and CUDA's transformers do not run there); MLX's line
    names the mlx-community conversion and its context is the MLX plan's longest within the working set."""
    from paramcount.memory.runtimes import planner

    model = load("Qwen/Qwen3-8B")
    llama, mlx = recommend(model, "M2 Max 64GB")
    assert (llama.runtime, mlx.runtime) == ("llama.cpp", "mlx") and mlx.fits
    assert mlx.command == f"mlx_lm.chat --model mlx-community/Qwen3-8B-8bit --max-kv-size {mlx.context}"
    assert mlx.gpu_bytes == planner(model, "mlx-8bit", "mlx").plan(mlx.context, 1).total
    assert mlx.speed["decode"]["label"] == "estimate"
