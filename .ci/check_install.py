"""Check a user install of topoalloc against the source tree it came from.

Run from outside the checkout (so the installed package is imported, not the
source folder): every Python module and data file of topoalloc/, proofs/ and
ilp/ must be installed (proofs/ and ilp/ as topoalloc.proofs and
topoalloc.ilp), every module must import, and the main command must run.
Where a C compiler is on the PATH, every compiled extension (a ``.c`` file of
topoalloc/) must have been built: they are optional so that an install without
a compiler succeeds, which would otherwise let a build failure pass unnoticed
(the tests of the compiled paths skip, the Python paths give the same results).
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
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
        if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".gz", ".typed", ".c", ".toml", ".json"):
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

compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
extensions = sorted("topoalloc." + str(f.relative_to(root / "topoalloc").with_suffix("")).replace("/", ".") for f in (root / "topoalloc").rglob("*.c"))
if compiler:
    missing_ext = [m for m in extensions if importlib.util.find_spec(m) is None]
    if missing_ext:
        sys.exit(f"check_install: a C compiler is here ({compiler}) but {len(missing_ext)} compiled extensions were not built: {missing_ext}")

out = subprocess.run([sys.executable, "-m", "topoalloc", "simulate", "--quiet", "--json"], capture_output=True, text=True, check=True).stdout
built = "all built" if compiler else "not checked: no C compiler"
print(f"check_install: {len(expected)} files installed, {len(modules)} modules import, {len(extensions)} compiled extensions ({built}), simulate ran ({len(out)} bytes of JSON)")
