"""The NumPy twin: a backend with the same names, arguments and results as the compiled
kernel (``sinpe._c._kernel``), module by module with the C headers of the same stem:

- ``exact_cos_sin`` (``exact.py`` <-> ``exact.h``): the exact evaluator;
- ``prepare_frequency_table`` (``turns.py`` <-> ``turns.h``): its per-frequency constants;
- ``log_dd``, ``power_vector`` (``frequencies.py`` <-> ``frequencies.h``): the frequency rule;
- ``Plan``, ``fill`` (``fill.py`` <-> ``fill.h`` and ``rotate.h``): the one filler;
- ``round_half`` (``half.py`` <-> ``half.h``): float16/bfloat16 rounded once;
- ``correctly_rounded``, ``undecided``, ``undecided_log`` (``correct.py`` <-> ``correct.h``
  and ``fill.h``): narrow values correctly rounded (the same bits by other operations: both
  are correct), how many were not decided and the inputs of the last of them;
- ``tally_block`` (``tally.py`` <-> ``tally.h``): the verdict core's pass over a block of a
  held table against its exact rows;
- ``dd.py`` <-> ``dd.h``: the error-free transformations they share.

``turns.exact_columns`` and ``exact.slow_columns`` (big integers) have no compiled twin:
both backends call them.
"""

from .correct import _set_checked as _set_checked
from .correct import correctly_rounded, undecided, undecided_log
from .exact import exact_cos_sin
from .fill import Plan, fill
from .frequencies import log_dd, power_vector
from .half import round_half
from .tally import tally_block
from .turns import prepare_frequency_table

NAME = "numpy"
ISA = "numpy"

__all__ = [
    "ISA",
    "NAME",
    "Plan",
    "correctly_rounded",
    "exact_cos_sin",
    "fill",
    "log_dd",
    "power_vector",
    "prepare_frequency_table",
    "round_half",
    "tally_block",
    "undecided",
    "undecided_log",
]
