"""The what-if's count of cold ops: an op whose previous op of the same name ended long enough before."""

from conftest import load_experiment


def test_cold_ops_are_counted_by_the_work_since_their_name_last_ran():
    cold_counts = load_experiment("whatif_cold_ops").cold_counts
    us = 1e-6
    # conv 100 µs, relu 2 µs, conv 100 µs, relu 2 µs: each relu ran 100 µs of conv after the other (cold at
    # 30 µs, cold at 100), each conv 2 µs of relu after the other (warm); the first ones look back a step
    step = [("conv", 100 * us), ("relu", 2 * us), ("conv", 100 * us), ("relu", 2 * us)]
    assert cold_counts(step, (30 * us, 100 * us)) == {30 * us: 2, 100 * us: 2}
    assert cold_counts(step, (101 * us,)) == {101 * us: 0}
    # an op alone in its step looks back over the whole step but itself: nothing in between
    assert cold_counts([("mm", 50 * us)], (1 * us,)) == {1 * us: 0}
    # a name that runs once among others: the rest of the step since its last run
    assert cold_counts([("a", 10 * us), ("b", 40 * us)], (30 * us,)) == {30 * us: 1}


def test_cold_ops_by_bytes_count_the_bytes_moved_in_between():
    cold_counts_by_bytes = load_experiment("whatif_cold_ops").cold_counts_by_bytes
    mib = 2**20
    # a copy of 4 MiB between two batch norms of 0.25 MiB: each norm is cold past 2 MiB, the copy is not
    step = [("copy_", 1e-4, 4 * mib), ("batch_norm", 1e-5, mib / 4)]
    assert cold_counts_by_bytes(step, (2 * mib,)) == {2 * mib: 1}
    assert cold_counts_by_bytes(step, (8 * mib,)) == {8 * mib: 0}
