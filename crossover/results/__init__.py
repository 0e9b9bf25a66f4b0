"""Results on disk and what a point's latency is: the bottom of the data flow.

=============  ====================================================================
module         what it holds
=============  ====================================================================
columns        one row's columns and types; the key that identifies a point
store          results directories: writing rows, reading and validating them, side files
statistics     a point's latency statistic (p10, median of rounds, fastest), the quiet level
drift          a run's drift-reference readings, run levels, mixed-speed warnings
compare        two runs point by point: ratios, intervals, verdicts
anchors        a fleet's nodes on one scale by the anchor they all measure; nodes compared
export         pyperf JSON, Parquet, torch.utils.benchmark Measurements
prices         prices per hour of whole machines (the prices file), a replica's share of one
=============  ====================================================================
"""

from ..lazy_exports import lazy_exports

#: Public name → the module of this package that defines it (imported on first use).
_EXPORTS = {
    "load_results": "store",
    "load_metadata": "store",
    "ResultsWriter": "store",
    "KEY_COLUMNS": "columns",
    "COLUMN_TYPES": "columns",
    "STATISTICS": "statistics",
    "DEFAULT_STATISTIC": "statistics",
    "QUIET_QUANTILE": "statistics",
    "compare_results": "compare",
    "drift_table": "drift",
    "MachinePrice": "prices",
    "read_prices": "prices",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
