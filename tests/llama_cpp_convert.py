"""llama.cpp's ``convert_hf_to_gguf.py`` (the checkout in ``$LLAMA_CPP_DIR``) on one model
folder, with one change for the tests' locally trained tokenizers: a BPE pre-tokenizer whose
hash the converter does not know is written as ``tokenizer.ggml.pre = "default"`` instead of
stopping the conversion (it names how a vocabulary splits text, nothing of the RoPE). As the
converter does by default, its own gguf-py goes first on the path.

    LLAMA_CPP_DIR=.../vendor/llama.cpp python llama_cpp_convert.py FOLDER --outfile X.gguf
"""

import os
import runpy
import sys

LLAMA_CPP = os.environ["LLAMA_CPP_DIR"]
sys.path[:0] = [LLAMA_CPP, os.path.join(LLAMA_CPP, "gguf-py")]

import conversion.base as base  # noqa: E402

_known = base.TextModel.get_vocab_base_pre


def _any_pre_tokenizer(self, tokenizer):
    try:
        return _known(self, tokenizer)
    except NotImplementedError:
        return "default"


base.TextModel.get_vocab_base_pre = _any_pre_tokenizer
sys.argv = [os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py"), *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
