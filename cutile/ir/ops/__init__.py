"""IR ops by section.  Each op is defined once here; executors implement it in same-named files."""

from ..core import OPS  # noqa: F401
from .advanced_indexing import AdvancedGather, AdvancedScatter  # noqa: F401
from .atomic import AtomicCAS, AtomicRMW, RawLoad, RawStore  # noqa: F401
from .control import Break, Continue, For, If, Loop, Return, Yield  # noqa: F401
from .creation import Constant, Iota  # noqa: F401
from .debug import Assert, Print  # noqa: F401
from .debugger import Breakpoint, Watch  # noqa: F401
from .elementwise import Binary, Compare, Convert, Fma, Select, Unary  # noqa: F401
from .index import BlockId, NumBlocks  # noqa: F401
from .matmul import Mma, MmaScaled  # noqa: F401
from .memory import ArrayDim, ArraySlice, ArrayStride, Gather, Load, Scatter, Store  # noqa: F401
from .pointer import ForeignPointer, FromForeign  # noqa: F401
from .reduce import ArgReduce, Reduce, ReduceFn  # noqa: F401
from .scan import CumScan, ScanFn  # noqa: F401
from .shape import (  # noqa: F401
    Bitcast,
    Broadcast,
    Cat,
    Extract,
    Insert,
    PackBytes,
    Permute,
    Reshape,
    UnpackBytes,
)
