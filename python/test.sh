#!/usr/bin/env bash
# Installs the Python package from this checkout into a fresh venv (maturin builds the abi3
# wheel; pip fetches maturin from PyPI) and runs its tests, its docstring examples and those of
# docs/python.md there. Part of the README's test command; a clean build takes ~4 minutes on 2
# cores.
set -euo pipefail
cd "$(dirname "$0")/.."
# The package's lock file must be current: the build below would otherwise rewrite it.
cargo metadata --locked --format-version 1 --manifest-path python/Cargo.toml >/dev/null
venv=target/python-test-venv
rm -rf "$venv"
"${PYTHON:-python3}" -m venv "$venv"
# pyarrow and Hugging Face datasets for the examples of dedup_table and dedup_dataset.
"$venv/bin/pip" install --quiet ./python "pyarrow==26.0.1" "datasets==5.2.0"
# From outside the checkout, so that `import dupflow` is the installed package.
cd "$venv" && bin/python -m unittest discover -s ../../python/tests -v
