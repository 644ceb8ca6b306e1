"""For the engines that convert a model's files rather than build from its config (llama.cpp's
converter, ONNX Runtime GenAI's builder): a tiny random model of the twin (transformers
builds it, seed 0, float32, and saves it with a small byte-level BPE tokenizer trained here
on a few sentences: each tool loads one; nothing is downloaded), and the tool's command line
run in this process (``run_as_main``), so that its own code is what runs."""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
from pathlib import Path

from .._check.steps import EngineFailed
from .._files import reading, writing
from ._shrink import VOCAB

__all__ = [
    "corpus",
    "llama_bpe_tokenizer",
    "run_as_main",
    "save_twin",
    "sentencepiece_tokenizer",
    "tokenizer",
]


def run_as_main(who: str, argv: list, run) -> None:
    """``run()`` (a tool's ``__main__``) with ``sys.argv`` set to ``argv`` and its output
    kept: an exit with an error is ``EngineFailed`` naming ``who`` and the tool's last line."""
    said = io.StringIO()
    saved = sys.argv
    try:
        sys.argv = argv
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            run()
    except SystemExit as exc:
        if exc.code not in (0, None):
            lines = [line for line in said.getvalue().splitlines() if line.strip()]
            last = lines[-1] if lines else ""
            raise EngineFailed(f"{who} exited {exc.code}: {last}") from None
    finally:
        sys.argv = saved


WORDS = (
    "the of and to in is was for on that with as by at from it an be this which or are his "
    "rope angle position token model layer cache float exact sine cosine table frequency base "
    "scale factor long short window global local head query key value attention llama gemma"
).split()


def corpus(n: int = 4000):
    """``n`` sentences of a few words each, the same every time (seed 0)."""
    rng = random.Random(0)
    for _ in range(n):
        yield " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))) + "."


def sentencepiece_tokenizer(folder, vocab: int = VOCAB) -> None:
    """A sentencepiece ``tokenizer.model`` of ``vocab`` pieces and its tokenizer_config.json
    (llama.cpp's converter takes one for Llama, Phi-3, Qwen3 and Gemma)."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=corpus(),
        model_writer=model,
        vocab_size=vocab,
        model_type="bpe",
        byte_fallback=True,
        user_defined_symbols=["<|endoftext|>"],  # llama.cpp's Phi-3 vocabulary requires it
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        num_threads=1,
        minloglevel=2,
    )
    config = dict(tokenizer_class="LlamaTokenizer", add_bos_token=True, add_eos_token=False)
    config.update(bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    # the twin's own tokenizer files (save_twin's), which these take the place of
    for name in ("tokenizer.model", "tokenizer_config.json"):
        Path(folder, name).unlink(missing_ok=True)
    writing.write_new(Path(folder, "tokenizer.model"), lambda s: s.write(model.getvalue()))
    text = json.dumps(config).encode()
    writing.write_new(Path(folder, "tokenizer_config.json"), lambda s: s.write(text))


def llama_bpe_tokenizer(folder) -> None:
    """The sentencepiece tokenizer above, and its ``tokenizer.json`` as transformers
    converts it (a BPE with byte fallback and a ``Sequence`` decoder: what llama.cpp's
    ``LlamaHfVocab`` takes, for Gemma 4)."""
    from transformers import AutoTokenizer

    sentencepiece_tokenizer(folder)
    Path(folder, "tokenizer.json").unlink(missing_ok=True)
    AutoTokenizer.from_pretrained(folder).save_pretrained(folder)


def tokenizer(folder) -> None:
    """A byte-level BPE tokenizer of ``VOCAB`` ids (the twin's vocabulary: about 490 trained
    on a few sentences, the rest unused special tokens), saved in ``folder``
    (transformers' ``PreTrainedTokenizerFast``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([f"the fox jumps over the dog {i} times" for i in range(200)], trainer)
    # exactly the twin's vocabulary: a converter may cut the embedding to the tokenizer's
    # ids (llama.cpp's Gemma 3, conversion/gemma.py Gemma3Model.modify_tensors) where its
    # vocabulary list is the config's size. Its first filler is the token Qwen's tokenizer
    # classes (Qwen2Tokenizer, Qwen3_5Tokenizer) add where it is absent: one id past the
    # vocabulary, which llama.cpp's converter refuses (get_vocab_base's assertion)
    count = VOCAB - bpe.get_vocab_size(with_added_tokens=True)
    bpe.add_special_tokens(["<|endoftext|>", *(f"<unused{i}>" for i in range(count - 1))])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=bpe, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(folder)


def save_twin(twin, out) -> Path:
    """The twin's model (the folder ``twin`` holds its config.json), randomly initialised
    (seed 0) in float32, saved by transformers in ``out`` with ``tokenizer``'s tokenizer.

    Its class is the config's own (``architectures``, as the model's checkpoint was saved:
    converters and builders dispatch on that name, ONNX Runtime GenAI's builder on
    ``Qwen3_5ForConditionalGeneration``, not the ``Qwen3_5ForCausalLM`` the auto class
    picks), unless the file leaves out a part that class builds (a vision-language class
    without a ``vision_config``: the part would be the class default's, not the model's);
    then, and where the config names no class transformers has, the auto class's."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(twin)
    given = reading.read_json(Path(twin, "config.json"), what="the twin's config")
    own = _own_class(transformers, config, given)
    torch.manual_seed(0)
    if own is not None:
        model = own._from_config(config, dtype=torch.float32)
    else:
        try:
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        except ValueError:  # a vision-language model (Mistral 3, ...): its whole class
            model = transformers.AutoModelForImageTextToText.from_config(
                config, dtype=torch.float32
            )
    model.save_pretrained(out)
    tokenizer(out)
    return Path(out)


def _own_class(transformers, config, given: dict):
    """The class the config's ``architectures`` names first, where transformers has it and
    the config file gives every sub-config it builds (``None`` otherwise)."""
    names = given.get("architectures")
    if not (isinstance(names, list) and names and isinstance(names[0], str)):
        return None
    own = getattr(transformers, names[0], None)
    if not (isinstance(own, type) and hasattr(own, "_from_config")):
        return None
    if any(part not in given for part in getattr(type(config), "sub_configs", {})):
        return None
    return own
