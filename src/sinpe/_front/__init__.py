"""Where sinpe 0.4.0 kept its private modules: pickles made then (a ``RopeSpec``, a patched
model's ``RotaryEmbedding``) name ``sinpe._front.spec`` and ``sinpe._front.rotary``, so those
names still load, as aliases of the modules' homes now. Nothing in sinpe imports this package.
"""

import sys

from .._rope import rotary, spec

sys.modules[__name__ + ".spec"] = spec
sys.modules[__name__ + ".rotary"] = rotary
