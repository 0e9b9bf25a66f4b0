"""The paper's coverage table: every paired run's measured crossover against its fitted interval."""

from types import SimpleNamespace

from crossover.paper.coverage import CoverageRun, coverage_macros, coverage_table, gpu_name
from crossover.paper.latex import NA


def _dist(median, q25, q75, n_crossing=8, n_rounds=8):
    return SimpleNamespace(median=median, q25=q25, q75=q75, n_crossing=n_crossing, n_rounds=n_rounds)


def test_each_run_is_scored_against_its_own_interval_with_its_width_and_bias():
    runs = [CoverageRun("nvidia-h200-16c", "experiments/results/nvidia-h200-16c/gpu-paired", _dist(120, 113, 124),
                        SimpleNamespace(x=100.0, low=90.0, high=130.0)),
            CoverageRun("nvidia-h100-80gb-hbm3-16c", "/x/nvidia-h100-80gb-hbm3-16c/run2/gpu_paired", _dist(100, 66, 126),
                        SimpleNamespace(x=110.0, low=105.0, high=108.0 + 2)),
            CoverageRun("nvidia-h100-80gb-hbm3-16c", "/x/other", _dist(50, 40, 60), None),
            CoverageRun("m", "/x/none", _dist(None, None, None, n_crossing=0, n_rounds=0), None)]
    m = {x.name: x.text for x in coverage_macros(runs)}
    assert m["CoverageAMachine"] == "H200" and m["CoverageARun"] == "gpu-paired"
    assert m["CoverageAHolds"] == "holds" and m["CoverageAWidth"] == "40" and m["CoverageABias"] == "-17"
    assert m["CoverageBRun"] == "run2/gpu\\_paired" and m["CoverageBHolds"] == "misses" and m["CoverageBBias"] == "+10"
    assert m["CoverageCFit"] == NA and m["CoverageCHolds"] == NA  # no fit: counted nowhere
    assert "CoverageDMachine" not in m  # a run without paired rounds is left out
    assert (m["CoverageRuns"], m["CoverageHolds"], m["CoverageBelow"]) == ("2", "1", "1")
    table = coverage_table(coverage_macros(runs))
    assert table.count("\\CoverageCMachine") == 1 and "\\CoverageDMachine" not in table


def test_gpu_machine_slugs_read_as_their_gpu():
    assert gpu_name("nvidia-h100-80gb-hbm3-16c") == "H100" and gpu_name("amd-epyc-2c") == "amd-epyc-2c"
