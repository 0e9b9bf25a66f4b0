import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from crossover.measurement.toy_counts import forward_flops, param_count, step_bytes, train_flops
from crossover.measurement.toy_model import ResidualMLP


@pytest.mark.parametrize(
    "d_model, n_layers, expected",
    [(128, 128, 2_097_152), (64, 128, 524_288), (4096, 128, 2_147_483_648)],
)
def test_param_count_matches_design(d_model, n_layers, expected):
    assert param_count(d_model, n_layers) == expected


@pytest.mark.parametrize("d_model, n_layers", [(64, 3), (128, 4), (96, 7)])
def test_param_count_matches_the_module(d_model, n_layers):
    model = ResidualMLP(d_model, n_layers)
    assert sum(p.numel() for p in model.parameters()) == param_count(d_model, n_layers)


def test_param_count_of_the_largest_model_without_allocating_it():
    model = ResidualMLP(4096, 128, device="meta")
    assert sum(p.numel() for p in model.parameters()) == 2_147_483_648


@pytest.mark.parametrize("d_model, n_layers, batch_size", [(64, 2, 1), (128, 5, 3), (48, 3, 17)])
def test_forward_flops_equal_flop_counter(d_model, n_layers, batch_size):
    model = ResidualMLP(d_model, n_layers)
    x = torch.randn(batch_size, d_model)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(x)
    assert counter.get_total_flops() == forward_flops(d_model, n_layers, batch_size)


@pytest.mark.parametrize("d_model, n_layers, batch_size", [(64, 2, 1), (32, 6, 5)])
def test_train_flops_equal_flop_counter(d_model, n_layers, batch_size):
    model = ResidualMLP(d_model, n_layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(batch_size, d_model)
    with FlopCounterMode(display=False) as counter:
        loss = torch.nn.functional.mse_loss(model(x), torch.zeros_like(x))
        loss.backward()
        optimizer.step()
    assert counter.get_total_flops() == train_flops(d_model, n_layers, batch_size)


def test_block_is_residual_relu_linear():
    model = ResidualMLP(8, 1)
    x = torch.randn(2, 8)
    weight = model.blocks[0].linear.weight
    expected = x + torch.relu(x @ weight.T)
    torch.testing.assert_close(model(x), expected)


def test_deep_model_stays_finite_even_in_float16():
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))  # a fixed input: the bound is about growth, not luck
    for dtype in (torch.float32, torch.float16):
        model = ResidualMLP(64, 3840, dtype=dtype)
        with torch.no_grad():
            y = model(x.to(dtype)).float()
        assert torch.isfinite(y).all()
        assert 1 <= y.norm() / x.norm() < 10  # bounded growth, and no vanishing either


def test_layers_get_distinct_weights_and_the_same_model_every_time():
    a, b = ResidualMLP(16, 3), ResidualMLP(16, 3)
    weights = [block.linear.weight for block in a.blocks]
    assert not torch.equal(weights[0], weights[1])
    torch.testing.assert_close(weights[2], b.blocks[2].linear.weight)


def test_bytes_count_weights_once_plus_activations():
    assert step_bytes(128, 2, 1) == 4 * (2 * 128**2 + 7 * 128 * 2)
    assert step_bytes(128, 2, 1, bytes_per_element=2) == step_bytes(128, 2, 1) // 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8"])
def test_sizes_must_be_positive_integers(bad):
    with pytest.raises(ValueError):
        param_count(bad, 4)
    with pytest.raises(ValueError):
        forward_flops(8, 4, bad)


def test_bytes_per_element_is_what_torch_stores():
    from crossover.axes import BYTES_PER_ELEMENT, DTYPES
    from crossover.measurement.toy_step import _TORCH_DTYPE

    assert set(BYTES_PER_ELEMENT) == set(DTYPES)
    for dtype in DTYPES:
        assert BYTES_PER_ELEMENT[dtype] == torch.tensor([], dtype=_TORCH_DTYPE[dtype]).element_size()
