"""Check a user install of topoalloc against the source tree it came from.

Run from outside the checkout (so the installed package is imported, not the
source folder): every Python module and data file of topoalloc/, proofs/ and
ilp/ must be installed (proofs/ and ilp/ as topoalloc.proofs and
topoalloc.ilp), every module must import, and the main command must run.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

root = Path(sys.argv[1]).resolve()
import topoalloc  # noqa: E402

installed = Path(topoalloc.__file__).resolve().parent
if root in installed.parents:
    sys.exit(f"check_install: topoalloc was imported from the checkout ({installed}), not from the install")

expected: dict[str, Path] = {}
for src, dest in (("topoalloc", ""), ("proofs", "proofs"), ("ilp", "ilp")):
    base = root / src
    for f in base.rglob("*"):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".gz", ".typed", ".c", ".toml"):
            expected[str(Path(dest) / f.relative_to(base))] = f
missing = [rel for rel in sorted(expected) if not (installed / rel).is_file()]
if missing:
    sys.exit(f"check_install: {len(missing)} source files are not installed, e.g. {missing[:5]}")

modules = []
for rel in sorted(expected):
    if rel.endswith(".py") and not rel.endswith("__main__.py"):
        mod = "topoalloc." + rel[:-3].replace("/", ".")
        modules.append(mod.removesuffix(".__init__"))
for mod in modules:
    importlib.import_module(mod)

out = subprocess.run([sys.executable, "-m", "topoalloc", "simulate", "--quiet", "--json"], capture_output=True, text=True, check=True).stdout
print(f"check_install: {len(expected)} files installed, {len(modules)} modules import, simulate ran ({len(out)} bytes of JSON)")
