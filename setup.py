"""The shipped data as packages: everything else is in pyproject.toml.

``packages.find`` finds crossover and every subpackage; the two data packages live outside the
package folder (``experiments/results`` and ``experiments/profiles``, one copy in git), so they are
added here with the folder each maps to.
"""

from setuptools import find_packages, setup

DATA_PACKAGES = {
    "crossover.shipped_results": "experiments/results",
    "crossover.shipped_profiles": "experiments/profiles",
}

setup(
    packages=find_packages(include=["crossover", "crossover.*"]) + list(DATA_PACKAGES),
    package_dir=DATA_PACKAGES,
)
