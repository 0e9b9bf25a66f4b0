"""The package's plain-text quantity formatter, and the LaTeX one's prefix choice built on it."""

import math

from crossover.paper import latex
from crossover.units import format_quantity, format_range, format_seconds, prefix_scale


def test_seconds_take_the_prefix_that_suits_each_value():
    assert format_seconds(1.234e-3) == "1.23 ms"
    assert format_seconds(2.5e-7) == "250 ns"
    assert format_seconds(42e-6) == "42 µs"
    assert format_seconds(3.2) == "3.2 s"
    assert format_seconds(5400) == "5400 s"  # no kiloseconds, no exponent
    assert format_seconds(0) == "0 s"
    assert format_seconds(1.23456e-3, 4) == "1.235 ms"


def test_a_value_rounding_up_to_1000_takes_the_next_prefix():
    assert format_seconds(999.7e-6) == "1 ms"
    assert format_quantity(999.9e9, "FLOP/s") == "1 TFLOP/s"


def test_rates_and_sizes_go_up_not_down():
    assert format_quantity(4.41e13, "FLOP/s") == "44.1 TFLOP/s"
    assert format_quantity(5e7, "FLOP/s") == "50 MFLOP/s"
    assert format_quantity(0.5, "FLOP/s") == "0.5 FLOP/s"  # no mFLOP/s
    assert format_quantity(512e3, "B") == "512 kB"
    assert format_quantity(12.3, "%") == "12.3 %" and format_quantity(12.3) == "12.3"


def test_missing_values_and_ranges():
    for missing in (None, math.nan, math.inf):
        assert format_quantity(missing, "s") == "n/a"
    assert format_range(1.2e-3, 1.5e-3, "s", 4) == "1.2–1.5 ms"
    assert format_range(800e-6, 1.2e-3, "s") == "0.8–1.2 ms"  # both ends in the unit of the high end
    assert format_range(None, 1.0, "s") == "n/a"


def test_prefix_scale_compares_in_the_given_unit():
    assert prefix_scale(2.5e-4, "s") == (1e6, "µs")
    assert prefix_scale(66800, "FLOP/s", ("G", "T", "P"), given="G") == (1e-3, "TFLOP/s")
    assert prefix_scale(999.0, "FLOP/s", ("G", "T", "P"), given="G") == (1.0, "GFLOP/s")
    # the LaTeX formatter keeps its own prefix sets (µs at the smallest, GB at the largest)
    assert latex.format_quantity(3e-9, "s") == "0.00300\\,\\ensuremath{\\mu}s"
    assert latex.format_quantity(2048, "MB") == "2.05\\,GB"
    assert latex.format_ratio(2.5) == "2.5\\ensuremath{\\times}" and latex.format_ratio(None) == latex.NA
