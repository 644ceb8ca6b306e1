import numpy as np
import numpy.typing as npt

HAVE_OPENMP: bool
SIMD: str
DEBUG: bool
BOUNDS_CHECKED: bool
C_ASSERTS: bool
EXACT_SIMD: str
HALF_SIMD: str

def max_threads() -> tuple[int, bool]: ...
def fill_table(
    out: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    coarse: npt.NDArray[np.float64],
    mid: npt.NDArray[np.float64],
    fine: npt.NDArray[np.float64],
    sin_col: int,
    cos_col: int,
    step: int,
    n_sin: int,
    n_cos: int,
    pad_col: int,
    threads: int,
) -> None: ...
def exact_cos_sin(
    positions: npt.NDArray[np.float64],
    table: npt.NDArray[np.float64],
    out: npt.NDArray[np.float64],
    threads: int,
) -> None: ...
def fill_exact(
    out: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    positions: npt.NDArray[np.float64],
    table: npt.NDArray[np.float64],
    sin_col: int,
    cos_col: int,
    step: int,
    n_sin: int,
    n_cos: int,
    pad_col: int,
    threads: int,
) -> None: ...
def fill_rope(
    cos_out: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    sin_out: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    positions: npt.NDArray[np.float64],
    anchor_index: npt.NDArray[np.intp],
    anchors: npt.NDArray[np.float64],
    mid: npt.NDArray[np.float64],
    fine: npt.NDArray[np.float64],
    table: npt.NDArray[np.float64],
    layout: int,
    factor: float,
    threads: int,
) -> None: ...
def round_half(
    values: npt.NDArray[np.float64], out: npt.NDArray[np.float16] | npt.NDArray[np.generic]
) -> None: ...
def log_dd(base: float) -> tuple[float, float]: ...
def power_vector(
    out: npt.NDArray[np.float64],
    log_hi: float,
    log_lo: float,
    numerator: float,
    denominator: float,
    scale: float,
) -> None: ...
def prepare_frequency_table(
    w: npt.NDArray[np.float64], table: npt.NDArray[np.float64]
) -> npt.NDArray[np.intp] | None: ...
