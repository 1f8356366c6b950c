"""Package discovery for the layout, and the optional compiled network engine.

proofs/ and ilp/ are top-level folders that install as topoalloc.proofs and
topoalloc.ilp.  Packages are found, never listed by hand, so a new subpackage
cannot be silently left out of the install (.ci/check_install.py compares an
installed copy with the source tree).  Everything else is in pyproject.toml.

The extension is ``optional``: without a C compiler the install still succeeds
and ``topoalloc.network`` runs its pure-Python reference engine (same results,
slower).
"""

from setuptools import Extension, find_packages, setup

#: top-level folders of the repository that install under topoalloc
MAPPED = ("proofs", "ilp")

packages = find_packages(include=["topoalloc", "topoalloc.*"])
package_dir = {}
for top in MAPPED:
    packages += [f"topoalloc.{top}"] + [f"topoalloc.{top}.{sub}" for sub in find_packages(top)]
    package_dir[f"topoalloc.{top}"] = top

setup(
    packages=packages,
    package_dir=package_dir,
    ext_modules=[Extension("topoalloc.network._cengine", sources=["topoalloc/network/_cengine.c"], optional=True)],
)
