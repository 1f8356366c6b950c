"""Build hook for the optional compiled network engine; everything else is in pyproject.toml.

The extension is ``optional``: without a C compiler the install still succeeds
and ``topoalloc.network`` runs its pure-Python reference engine (same results,
slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "topoalloc.network._cengine",
            sources=["topoalloc/network/_cengine.c"],
            optional=True,
        )
    ]
)
