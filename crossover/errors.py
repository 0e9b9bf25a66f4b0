"""The errors a user can cause; the CLI turns each into one line and exit status 2."""


class CrossoverError(ValueError):
    """Base class of the user-facing errors below."""


class ConfigError(CrossoverError):
    """A configuration that cannot be measured here (invalid, unsupported, or does not fit)."""


class SuiteError(CrossoverError):
    """A suite file that cannot be read or is not a valid suite."""


class ResultsError(CrossoverError):
    """A results directory or file that is missing, of another schema, or malformed."""


class BusyMachineError(CrossoverError):
    """Other processes compete for the cores a measurement needs, and the user asked for --strict."""


class AnalysisError(CrossoverError):
    """Results that cannot be fitted or compared (no data, too few points, unknown series)."""


class TraceError(AnalysisError):
    """A model that cannot be traced on the given input (the message names the module that failed)."""


class PriceError(CrossoverError):
    """A prices file that cannot be read, a price that is not a positive number, or a machine without one."""
