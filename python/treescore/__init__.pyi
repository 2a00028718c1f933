# __init__.pyi: type stubs of the treescore package's public API.
from os import PathLike
from typing import Any, Dict, List, Optional, Union

import numpy as np
import numpy.typing as npt

__version__: str

class Error(ValueError):
    """A bad model, bad data or a failed library call; `status` names the C status."""
    status: str

ArrayLike = Union[npt.ArrayLike, Any]  # ndarray, pandas.DataFrame, scipy.sparse matrix, list of lists

class Model:
    """A tree ensemble loaded for fast exact scoring (see treescore.Model.__doc__)."""
    def __init__(
        self,
        model_file: Optional[Union[str, PathLike[str]]] = ...,
        model_str: Optional[Union[str, bytes, bytearray, memoryview]] = ...,
        *,
        model_format: str = ...,
        engine: str = ...,
        isa: Optional[str] = ...,
        threads: int = ...,
        batch_hint: int = ...,
        sample: Optional[ArrayLike] = ...,
    ) -> None: ...
    @classmethod
    def from_booster(cls, booster: Any, *, engine: str = ..., isa: Optional[str] = ..., threads: int = ...,
                     batch_hint: int = ..., sample: Optional[ArrayLike] = ...) -> Model: ...
    @classmethod
    def from_sklearn(cls, estimator: Any, *, engine: str = ..., isa: Optional[str] = ..., threads: int = ...,
                     batch_hint: int = ..., sample: Optional[ArrayLike] = ...) -> Model: ...
    def predict(self, X: ArrayLike, raw_score: bool = ..., *, n_jobs: Optional[int] = ...) -> npt.NDArray[np.float64]: ...
    @property
    def num_trees(self) -> int: ...
    @property
    def num_features(self) -> int: ...
    @property
    def num_outputs(self) -> int: ...
    @property
    def feature_names(self) -> Optional[List[str]]: ...
    @property
    def engine(self) -> str: ...
    @property
    def isa(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def objective(self) -> str: ...
    @property
    def model_format(self) -> str: ...
    def info(self) -> Dict[str, Any]: ...
    def plan_report(self) -> str: ...
    def __getstate__(self) -> Dict[str, Any]: ...
    def __setstate__(self, state: Dict[str, Any]) -> None: ...
