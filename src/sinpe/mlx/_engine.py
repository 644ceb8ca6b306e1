"""MLX-LM's reading of a config (``sinpe engines``): mlx_lm builds the twin's model as
``mlx_lm.utils.load_model`` does (its config read by ``load_config``, the class and its
arguments chosen by ``_get_classes``; no weights: the RoPE modules hold none),
and ``sinpe.mlx.check`` judges each distinct RoPE module, called at the core's probe positions up to
the length asked for.

Its run line (``run``): the run model loaded by ``mlx_lm.utils.load_model`` and called on the
``K`` tokens with a cache whose offset is ``p`` (mlx_lm's models rotate at ``cache.offset``
and mask by the cache): a ``KVCache`` (a sliding layer's ``RotatingKVCache``, its window kept)
that holds no keys before ``p``, so that the tokens sit at positions ``p .. p + K - 1`` and
attend to each other only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._check.steps import EngineFailed, step
from ._check import check

__all__ = ["read", "run"]


def read(folder, original: dict, length: int):
    """``(layers, notes, how)``: each distinct RoPE module's verdict against ``original``."""
    from mlx_lm import utils

    with step("mlx_lm.utils.load_config"):
        config = utils.load_config(folder)
    with step("mlx_lm.utils._get_classes"):
        model_class, args_class = utils._get_classes(config=config)
    with step(f"building {model_class.__module__}.Model"):
        model = model_class(args_class.from_dict(config))
    reports = check(model, original, length=length)
    layers = [
        (f"{r.cls} x{r.rotary_dim} ({r.names[0]}: {len(r.names)} layers)", r.judgment)
        for r in reports
    ]
    return layers, (), None


def run(model, original: dict, offsets):
    """MLX-LM's run line: the run model (``_engines/_run.py`` makes it, beside the twin's
    config.json as the config gives it; in its published checkpoint's layout where that is
    not transformers', ``_check/published.py``: gpt-oss's MXFP4 experts) loaded by
    ``mlx_lm.utils.load_model`` (float32, as saved), its forward on the run's tokens with a
    cache at offset ``p`` for each ``p``."""
    import mlx.core as mx
    from mlx_lm import utils

    from .._check import run as _run
    from .._check.published import published_layout

    with step("the run model in its published layout"):
        model = published_layout(model, "mlx-lm")
    with step("mlx_lm.utils.load_model (the run model)"):
        loaded, config = utils.load_model(Path(model))
    vocab = config.get("vocab_size") or config.get("text_config", {}).get("vocab_size")
    if not isinstance(vocab, int) or not 0 < vocab < 1 << 24:
        raise EngineFailed(f"the run model's vocab_size is {vocab!r}")
    ids = mx.array([_run.tokens(vocab)])
    logprobs: dict = {}
    notes: set = set()
    for p in offsets:
        with step(f"its forward with a cache at offset {p:,}"):
            cache, kept = _caches_at(loaded, p)
            logits = loaded(ids, cache=cache)
            logprobs[p] = _run.log_softmax(np.array(logits[0].astype(mx.float32)))
        notes.update(f"its {name} layers run from an empty {name}" for name in kept)
    how = (
        "the run model loaded by mlx_lm.utils.load_model (float32), its forward with a KV "
        "cache at offset p, holding no keys before it"
    )
    return _run.RunResult(logprobs, None, tuple(sorted(notes)), how)


def _caches_at(model, p: int):
    """The model's own caches (``make_prompt_cache``), each ``KVCache`` and
    ``RotatingKVCache`` replaced by one at offset ``p`` (``_offset_cache``); the names of the
    other kinds kept as made (a linear attention's state: no positions)."""
    from mlx_lm.models import cache as caches

    at = _offset_cache()
    made, kept = [], set()
    for one in caches.make_prompt_cache(model):
        if type(one) is caches.KVCache:
            made.append(at(p))
        elif type(one) is caches.RotatingKVCache:
            made.append(at(p, one.max_size))
        elif hasattr(one, "offset"):
            raise EngineFailed(f"its {type(one).__name__}: sinpe sets no offset of that kind")
        else:
            made.append(one)
            kept.add(type(one).__name__)
    return made, kept


_OFFSET_CACHE: list = []


def _offset_cache():
    """mlx_lm's ``KVCache`` starting at offset ``p`` with no keys before it: the model
    rotates at ``cache.offset``; the cache returns the run's own keys and masks as for a
    first chunk (causal, the sliding window kept)."""
    if _OFFSET_CACHE:
        return _OFFSET_CACHE[0]
    import mlx.core as mx
    from mlx_lm.models import cache as caches

    class OffsetCache(caches.KVCache):
        def __init__(self, p: int, window: int | None = None):
            super().__init__()
            self.offset = self.start = p
            self.window = window

        def update_and_fetch(self, keys, values):
            if self.keys is None:
                self.keys, self.values = keys, values
            else:
                self.keys = mx.concatenate([self.keys, keys], axis=2)
                self.values = mx.concatenate([self.values, values], axis=2)
            self.offset += keys.shape[2]
            return self.keys, self.values

        def make_mask(self, N, window_size=None, return_array=False):  # noqa: N803 (mlx_lm's)
            window = window_size or self.window
            return caches.create_attention_mask(N, self.offset - self.start, return_array, window)

    _OFFSET_CACHE.append(OffsetCache)
    return OffsetCache
