"""The package type-checks: ``mypy topoalloc`` with the configuration in pyproject.toml
(--strict, less two numpy relaxations that the configuration states)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_strict_passes():
    if shutil.which("mypy") is None and subprocess.run([sys.executable, "-m", "mypy", "--version"], capture_output=True).returncode:
        pytest.fail("mypy is a test dependency: pip install -e '.[test]'")
    p = subprocess.run([sys.executable, "-m", "mypy", "topoalloc"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:]


def test_package_is_marked_typed():
    assert (ROOT / "topoalloc" / "py.typed").is_file()
