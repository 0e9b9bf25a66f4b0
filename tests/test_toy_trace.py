"""The toy model's trace interpolated from a few real traces: the same rows as tracing each size."""

import pytest

from crossover.fit import toy_trace as T


@pytest.mark.parametrize("workload, dtype", [("forward", "float32"), ("train", "float32"), ("forward", "bfloat16"),
                                             ("train", "float16")])
@pytest.mark.parametrize("n_layers", [1, 2])
def test_the_interpolated_trace_is_the_real_trace_at_every_size(workload, dtype, n_layers):
    sizes = [(d, b) for d in (1, 2, 3, 64, 127, 1024) for b in (1, 2, 7, 32, 33, 2048)] + [(4099, 3), (513, 1001)]
    for d, b in sizes:
        assert T.toy_trace(d, n_layers, b, workload, dtype) == T.traced_toy(d, n_layers, b, workload, dtype), (d, b)


def test_a_trace_that_is_no_polynomial_of_the_size_is_traced_for_real(monkeypatch):
    real = T.traced_toy

    def odd(d_model, n_layers, batch_size, workload, dtype):  # a FLOP count of d³: beyond degree two
        rows, calls, n_params, param_bytes = real(d_model, n_layers, batch_size, workload, dtype)
        return [dict(rows[0], flops=d_model**3)] + rows[1:], calls, n_params, param_bytes

    monkeypatch.setattr(T, "traced_toy", odd)
    monkeypatch.setattr(T, "_TEMPLATES", {})
    monkeypatch.setattr(T, "shipped_templates", lambda: {})
    assert T.toy_trace(40, 1, 3) == odd(40, 1, 3, "forward", "float32")
    assert T._TEMPLATES[1, "forward", "float32"] is None


def test_the_shipped_templates_are_those_the_installed_torch_builds(tmp_path):
    import torch

    written = T.write_templates(tmp_path / "toy_traces.json")
    fresh = T.shipped_templates(written)
    assert set(fresh) == set(T._SHIPPED_KEYS)
    shipped = T.shipped_templates()
    if not shipped:
        pytest.skip(f"the shipped templates are of another torch than {torch.__version__}: "
                    "python -m crossover.fit.toy_trace rewrites them")
    assert shipped == fresh


def test_templates_of_another_torch_are_not_used(tmp_path):
    path = tmp_path / "toy_traces.json"
    path.write_text('{"torch": "0.0.1", "templates": []}')
    assert T.shipped_templates(path) == {}
    assert T.shipped_templates(tmp_path / "absent.json") == {}
