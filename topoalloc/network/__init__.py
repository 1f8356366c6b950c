"""Message-level simulation of the interconnect: wormhole flits (cycle-accurate) or packets (a model).

* :class:`NetworkConfig` — packet size, buffers, virtual channels, router
  delay, switching (wormhole, virtual cut-through, store-and-forward), flit
  or packet level.
* :class:`Network` — one machine's network, simulated incrementally (add
  packets, run to a cycle, stop when a job's last packet arrives).  The
  model and both engines (a compiled one and the pure-Python reference,
  identical results) are documented in :mod:`topoalloc.network.engine`.
* :func:`run_traffic`, :func:`sweep` — synthetic traffic (``TRAFFIC``:
  uniform, transpose, bit-complement, bit-reverse, shuffle, tornado,
  neighbour, hotspot), latency–throughput curves and saturation.
* :mod:`topoalloc.network.jobs` — jobs that communicate: per-job
  communication time and contention slowdown, and the hook a scheduling
  simulation calls (:class:`~topoalloc.network.jobs.NetworkModel`).

Routing is the topology's own (``Topology.route``): dimension order on meshes
and tori (dateline virtual channels on tori when ``vcs >= 2``), E-cube on
hypercubes.  Deadlock freedom of that routing is proved in
:mod:`topoalloc.proofs.deadlock`.
"""

from .config import NetworkConfig
from .engine import Network, compiled_available
from .jobs import JOB_PATTERNS, JobCommunication, JobSpec, JobTraffic, NetworkModel, run_jobs
from .sim import SweepResult, TrafficResult, run_traffic, sweep, zero_load_latency
from .tables import NetworkTables, network_tables
from .traffic import TRAFFIC, make_traffic

__all__ = [
    "NetworkConfig",
    "Network",
    "compiled_available",
    "NetworkTables",
    "network_tables",
    "TRAFFIC",
    "make_traffic",
    "run_traffic",
    "sweep",
    "TrafficResult",
    "SweepResult",
    "zero_load_latency",
    "JOB_PATTERNS",
    "JobTraffic",
    "JobSpec",
    "JobCommunication",
    "NetworkModel",
    "run_jobs",
]
