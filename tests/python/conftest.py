# tests/python/conftest: fixtures of the Python API tests — the `strata` binary (STRATA_BIN, set by ctest) run
# with --json so each test can compare the module's to_dict() with the CLI's output for the same inputs.
import json
import os
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    """cli(*args) -> (exit code, stdout, stderr) of the strata binary."""
    binary = os.environ.get("STRATA_BIN")
    if not binary:
        pytest.skip("STRATA_BIN not set (ctest sets it)")

    def run(*args):
        p = subprocess.run([binary, *args], capture_output=True, text=True, cwd=SOURCE_DIR, timeout=300)
        return p.returncode, p.stdout, p.stderr

    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    """cli_json(*args) -> the parsed stdout of a command that must succeed."""

    def run(*args):
        code, out, err = cli(*args)
        assert code == 0, err
        return json.loads(out)

    return run


@pytest.fixture(scope="session")
def cli_error(cli):
    """cli_error(*args) -> the one-line message of a command that must fail with exit 2."""

    def run(*args):
        code, out, err = cli(*args)
        assert code == 2, (code, out, err)
        prefix = "strata: error: "
        assert err.startswith(prefix) and err.endswith("\n"), err
        return err[len(prefix):-1]

    return run


@pytest.fixture
def example():
    return lambda name: str(SOURCE_DIR / "examples" / name)
