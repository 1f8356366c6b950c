"""Workloads: SWF traces, cleaning filters, transforms and synthetic generators."""

from .core import SWF_FIELDS, Job, Workload
from .swf import default_trace_path, read_swf, write_swf

__all__ = ["SWF_FIELDS", "Job", "Workload", "read_swf", "write_swf", "default_trace_path"]
