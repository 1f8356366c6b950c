"""Package discovery for the layout: proofs/ and ilp/ are top-level folders that install as
topoalloc.proofs and topoalloc.ilp.  Everything else is in pyproject.toml.

Packages are found, never listed by hand, so a new subpackage cannot be
silently left out of the install (.ci/check_install.py compares an installed
copy with the source tree).
"""

from setuptools import find_packages, setup

#: top-level folders of the repository that install under topoalloc
MAPPED = ("proofs", "ilp")

packages = find_packages(include=["topoalloc", "topoalloc.*"])
package_dir = {}
for top in MAPPED:
    packages += [f"topoalloc.{top}"] + [f"topoalloc.{top}.{sub}" for sub in find_packages(top)]
    package_dir[f"topoalloc.{top}"] = top

setup(packages=packages, package_dir=package_dir)
