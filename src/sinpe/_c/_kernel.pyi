import numpy as np
import numpy.typing as npt

NAME: str
THREADS: str
ISA: str
ISA_NAMES: tuple[str, ...]
ISA_REASON: str
CPU_ISA: str
EMULATED: bool
DEBUG: bool
BOUNDS_CHECKED: bool
C_ASSERTS: bool

def _set_isa(name: str) -> str: ...
def threadpool_threads() -> int: ...
def helpers() -> int: ...
def exact_cos_sin(
    positions: npt.NDArray[np.float64],
    table: npt.NDArray[np.float64],
    out: npt.NDArray[np.float64],
    threads: int,
) -> None: ...
def prepare_frequency_table(
    w: npt.NDArray[np.float64], table: npt.NDArray[np.float64]
) -> npt.NDArray[np.intp] | None: ...
def log_dd(base: float) -> tuple[float, float]: ...
def power_vector(
    out: npt.NDArray[np.float64],
    first: int,
    log_hi: float,
    log_lo: float,
    numerator: float,
    denominator: float,
    scale: float,
) -> None: ...

class Plan:
    grid: npt.NDArray[np.float64]
    table: npt.NDArray[np.float64]
    segments: npt.NDArray[np.int64]
    width: int
    planes: int
    pad_col: int
    factor: float
    axes: int
    def __init__(
        self,
        grid: npt.NDArray[np.float64],
        table: npt.NDArray[np.float64],
        segments: npt.NDArray[np.int64],
        width: int,
        planes: int,
        pad_col: int,
        factor: float,
    ) -> None: ...

def fill(
    plan: Plan,
    out0: npt.NDArray[np.generic],
    out1: npt.NDArray[np.generic] | None,
    anchors: npt.NDArray[np.float64] | None,
    values: npt.NDArray[np.float64] | None,
    codes: npt.NDArray[np.int64] | None,
    start: int,
    origin: float,
    threads: int,
    whole: bool = False,
) -> None: ...
def round_half(values: npt.NDArray[np.float64], out: npt.NDArray[np.generic]) -> None: ...
def correctly_rounded(
    p: float, w: float, factor: float, dtype: str
) -> tuple[float, float, bool]: ...
def undecided() -> int: ...
def tally_block(
    cos: npt.NDArray[np.float64] | npt.NDArray[np.float32],
    sin: npt.NDArray[np.float64] | npt.NDArray[np.float32] | None,
    want_cos: npt.NDArray[np.float64],
    want_sin: npt.NDArray[np.float64],
    cols: npt.NDArray[np.intp],
    positions: npt.NDArray[np.int64],
    rates: npt.NDArray[np.float64],
    match: float,
    row_max: npt.NDArray[np.float64],
) -> tuple[float, int, float, int, float, float, float, float]: ...
def undecided_log() -> list[dict[str, float | str]]: ...

CHECKED: bool

def _set_checked(checked: bool) -> bool: ...
def _set_exact_tiny(exact: bool) -> bool: ...
