"""The environment record counts physical cores from sysfs: 16 logical CPUs may be 8 cores of two threads."""

from crossover.measurement.environment import cpu_physical_cores


def _cpus(root, cores):
    for cpu, (package, core) in enumerate(cores):
        topology = root / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")


def test_two_threads_a_core_count_once(tmp_path):
    _cpus(tmp_path, [(0, c % 8) for c in range(16)])  # 16 CPUs, siblings share core ids 0-7
    (tmp_path / "cpufreq").mkdir()  # not a CPU
    assert cpu_physical_cores(tmp_path) == 8


def test_core_ids_repeat_across_packages(tmp_path):
    _cpus(tmp_path, [(p, c) for p in (0, 1) for c in range(4)])
    assert cpu_physical_cores(tmp_path) == 8


def test_no_topology_says_nothing(tmp_path):
    (tmp_path / "cpu0").mkdir()
    assert cpu_physical_cores(tmp_path) is None and cpu_physical_cores(tmp_path / "nowhere") is None
