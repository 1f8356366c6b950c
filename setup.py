"""Package discovery for the layout, and the optional compiled extensions.

proofs/ and ilp/ are top-level folders that install as topoalloc.proofs and
topoalloc.ilp.  Packages are found, never listed by hand, so a new subpackage
cannot be silently left out of the install (.ci/check_install.py compares an
installed copy with the source tree).  Everything else is in pyproject.toml.

The extensions are ``optional``: without a C compiler the install still
succeeds, ``topoalloc.network`` runs its pure-Python reference engine, the
simulation its general engine and the SWF reader its Python parser (same
results, slower).  ``_cengine`` is the network simulator's engine;
``_ckernel`` simulates counting allocators, the hypercube's buddy and
Gray code allocators on their busy masks, and its free list (and AFL) on its own lists (``topoalloc.sched.fastpath``);
``_cplan`` conservative backfilling's searches and replays on allocator states (``topoalloc.sched.plan``); ``_cswf`` parses plain SWF text
(``topoalloc.workload.swf``); ``_cgrant`` the grant check every allocation passes
(``topoalloc.alloc.base``); ``_cboxes`` the slice allocator's box search
(``topoalloc.alloc.slices``); ``_ccenter`` the center-based allocators' search (MC1x1, Gen-Alg, MM:
``topoalloc.alloc.center``); ``_csubcube`` complete subcube recognition for the free list and the AFL
(``topoalloc.alloc.hypercube``); ``_cmetrics`` the connected components of
the locality metrics (``topoalloc.metrics.locality``); ``_cmesh`` the 2-D Best Fit search
(``topoalloc.alloc.mesh2d.core``); ``_clinear`` the linear allocators' grants replayed after
the kernel (``topoalloc.sched.fastpath``).
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
    ext_modules=[
        Extension("topoalloc.network._cengine", sources=["topoalloc/network/_cengine.c"], optional=True),
        Extension("topoalloc.sched._ckernel", sources=["topoalloc/sched/_ckernel.c"], optional=True),
        Extension("topoalloc.sched._cplan", sources=["topoalloc/sched/_cplan.c"], optional=True),
        Extension("topoalloc.workload._cswf", sources=["topoalloc/workload/_cswf.c"], optional=True),
        Extension("topoalloc.alloc._cgrant", sources=["topoalloc/alloc/_cgrant.c"], optional=True),
        Extension("topoalloc.alloc._cboxes", sources=["topoalloc/alloc/_cboxes.c"], optional=True),
        Extension("topoalloc.alloc._ccenter", sources=["topoalloc/alloc/_ccenter.c"], optional=True),
        Extension("topoalloc.alloc.hypercube._csubcube", sources=["topoalloc/alloc/hypercube/_csubcube.c"], optional=True),
        Extension("topoalloc.metrics._cmetrics", sources=["topoalloc/metrics/_cmetrics.c"], optional=True),
        Extension("topoalloc.alloc.mesh2d._cmesh", sources=["topoalloc/alloc/mesh2d/_cmesh.c"], optional=True),
        Extension("topoalloc.alloc.linear._clinear", sources=["topoalloc/alloc/linear/_clinear.c"], optional=True),
    ],
)
