"""topoalloc: processor allocation for tori, meshes, hypercubes and graphs."""
__version__ = "0.1.0"
