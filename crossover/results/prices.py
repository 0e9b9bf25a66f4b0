"""Prices per hour of whole machines, read from one TOML file: what a replica of a device costs.

The package ships one prices file (``crossover/prices.toml``,
:func:`crossover.shipped_data.shipped_prices_file`), one table per machine label (the label results
and profiles record, e.g. ``nvidia-h200-16c``)::

    ["nvidia-h200-16c"]
    name = "one-H200 instance with a 16-vCPU host"   # optional: what is priced
    usd_per_hour = 4.00                               # the WHOLE machine, its host CPU included
    source = "assumed (no cited price): ..."          # required: where the price comes from
    url = "https://..."                               # optional
    cores = 16                                        # optional: else the cores its data record

    ["nvidia-h200-16c".cpu_only]                      # optional: its CPU alone as a CPU-only
    usd_per_hour = 0.56                               # instance of the same size (the paper's
    source = "..."                                    # cost section prices a host CPU with it)

``crossover advise`` prices a GPU replica at its machine's price and a CPU replica at ``k`` threads
at ``k / cores`` of it (:meth:`MachinePrice.replica_usd_per_hour`); the paper's cost section
(:mod:`crossover.paper.claims`) and fleet targets read the same format. No price is a constant of
the code. Pure reading and checking; the one error is :class:`crossover.errors.PriceError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Optional

from ..errors import PriceError

__all__ = ["MachinePrice", "read_prices", "with_overrides", "parse_price_override", "price_of",
           "machine_cores"]


@dataclass(frozen=True)
class MachinePrice:
    """What one machine costs an hour.

    Attributes
    ----------
    machine : str
        The machine label (as results and profiles record it).
    usd_per_hour : float
        The whole machine's price, US dollars an hour (a GPU machine's host CPU included).
    source : str
        Where the price comes from; an assumption says so ("assumed ...").
    name, url : str
        What is priced, and the address of the source ("" where none).
    cores : int or None
        The machine's cores, where the file states them (else the data's count is used).
    cpu_only : MachinePrice or None
        Its CPU alone as a CPU-only instance of the same size, where the file states one (the
        paper's cost section prices a host CPU's latency with it; ``advise`` does not).
    """

    machine: str
    usd_per_hour: float
    source: str
    name: str = ""
    url: str = ""
    cores: Optional[int] = None
    cpu_only: Optional["MachinePrice"] = field(default=None, repr=False)

    def replica_usd_per_hour(self, device: str, threads: Optional[int] = None,
                             cores: Optional[int] = None) -> float:
        """US dollars an hour of one replica on this machine.

        Parameters
        ----------
        device : str
            ``"cpu"`` or a GPU (``"cuda"``, ``"cuda:0"``).
        threads : int, optional
            A CPU replica's threads (its share of the machine).
        cores : int, optional
            The machine's cores (:attr:`cores` where the file states them takes precedence).

        Returns
        -------
        float
            A GPU replica: the machine's price. A CPU replica: ``threads / cores`` of it.

        Raises
        ------
        PriceError
            A CPU replica without a thread count or a core count.
        """
        if device != "cpu":
            return self.usd_per_hour
        cores = self.cores or cores
        if not threads or not cores:
            raise PriceError(f"cannot price a CPU replica on {self.machine}: its threads ({threads}) or the "
                             f"machine's cores ({cores}) are unknown; state cores = N in its prices table")
        return self.usd_per_hour * min(int(threads), int(cores)) / int(cores)


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _entry(machine: str, table: Mapping, where: str) -> MachinePrice:
    price = table.get("usd_per_hour")
    if not _positive(price):
        raise PriceError(f"{where}: [{machine}] usd_per_hour must be a positive number, got {price!r}")
    source = str(table.get("source", "")).strip()
    if not source:
        raise PriceError(f"{where}: [{machine}] needs a source (where the price comes from, or 'assumed ...')")
    cores = table.get("cores")
    if cores is not None and not (isinstance(cores, int) and not isinstance(cores, bool) and cores > 0):
        raise PriceError(f"{where}: [{machine}] cores must be a positive integer, got {cores!r}")
    return MachinePrice(machine=machine, usd_per_hour=float(price), source=source, name=str(table.get("name", "")),
                        url=str(table.get("url", "")), cores=cores)


def read_prices(path=None) -> dict:
    """The prices file: machine label → :class:`MachinePrice`.

    Parameters
    ----------
    path : path, optional
        A prices TOML (default: the package's, :func:`crossover.shipped_data.shipped_prices_file`).

    Returns
    -------
    dict
        One entry per machine table, in the file's order.

    Raises
    ------
    PriceError
        An unreadable file, a table that is not a machine's, a price that is not a positive number,
        a price without a source.
    """
    import tomllib

    from ..shipped_data import shipped_prices_file

    path = Path(path) if path is not None else shipped_prices_file()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PriceError(f"cannot read prices from {path}: {exc}") from None
    out = {}
    for machine, table in data.items():
        if not isinstance(table, dict):
            raise PriceError(f"{path}: {machine!r} is not a machine's table (expected [\"<machine label>\"] "
                             "with usd_per_hour and source)")
        entry = _entry(machine, table, str(path))
        cpu_only = table.get("cpu_only")
        if cpu_only is not None:
            if not isinstance(cpu_only, dict):
                raise PriceError(f"{path}: [{machine}] cpu_only must be a table")
            entry = replace(entry, cpu_only=_entry(f"{machine}.cpu_only", cpu_only, str(path)))
        out[machine] = entry
    return out


def parse_price_override(text: str) -> tuple:
    """``"MACHINE=USD_PER_HOUR"`` → ``(machine, usd_per_hour)``.

    Raises
    ------
    PriceError
        No ``=``, an empty machine, or a price that is not a positive number.
    """
    machine, sep, value = str(text).rpartition("=")
    machine = machine.strip()
    try:
        price = float(value)
    except ValueError:
        price = float("nan")
    if not sep or not machine or not (math.isfinite(price) and price > 0):
        raise PriceError(f"expected MACHINE=USD_PER_HOUR with a positive price, got {text!r}")
    return machine, price


def with_overrides(prices: Mapping, overrides: Optional[Mapping] = None) -> dict:
    """``prices`` with each machine of ``overrides`` (label → USD an hour) priced as given.

    An overridden machine keeps its name, cores and CPU-only price; its source says where the price
    came from (``"given on the command line (--price)"``); a machine the file lacks is added.

    Raises
    ------
    PriceError
        A price that is not a positive number.
    """
    out = dict(prices)
    for machine, price in (overrides or {}).items():
        if not _positive(price):
            raise PriceError(f"the price of {machine} must be a positive number of USD an hour, got {price!r}")
        source = "given on the command line (--price)"
        old = out.get(machine)
        out[machine] = (replace(old, usd_per_hour=float(price), source=source, url="") if old else
                        MachinePrice(machine=machine, usd_per_hour=float(price), source=source))
    return out


def price_of(prices: Mapping, machines, where: str = "the prices file") -> dict:
    """The prices of ``machines`` (labels): label → :class:`MachinePrice`.

    Raises
    ------
    PriceError
        One line naming every machine without a price, and how to give one.
    """
    machines = list(dict.fromkeys(machines))
    missing = [m for m in machines if m not in prices]
    if missing:
        names = ", ".join(missing)
        raise PriceError(f"no price for {'machine' if len(missing) == 1 else 'machines'} {names} in {where}: "
                         f"add a [\"{missing[0]}\"] table with usd_per_hour and source to a prices file "
                         f"(--prices FILE) or pass --price {missing[0]}=USD_PER_HOUR")
    return {m: prices[m] for m in machines}


def machine_cores(results_dirs) -> dict:
    """Machine label → its logical cores, as the results directories' environment records say.

    Parameters
    ----------
    results_dirs : iterable of path
        Directories holding ``metadata.json`` (a run's ``results_dir``).

    Returns
    -------
    dict
        The largest core count recorded per machine; machines whose runs record none are left out.
    """
    from .store import load_metadata
    from ..errors import ResultsError

    cores = {}
    for directory in dict.fromkeys(str(d) for d in results_dirs):
        try:
            runs = load_metadata(directory)["runs"].values()
        except ResultsError:
            continue
        for run in runs:
            env = run.get("environment", run) if isinstance(run, dict) else {}
            machine, count = env.get("machine"), env.get("cpu_logical_cores")
            if machine and isinstance(count, int) and count > 0:
                cores[machine] = max(cores.get(machine, 0), count)
    return cores
