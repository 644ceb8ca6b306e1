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

from sinpe._engines.llama_cpp import any_pre_tokenizer  # noqa: E402

any_pre_tokenizer()  # the one change sinpe engines makes to the converter too
sys.argv = [os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py"), *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
