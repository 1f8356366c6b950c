"""The simplest correct EASY backfilling over processor counts: the reference flat EASY is measured against.

Usage: python benchmarks/naive_easy.py TRACE.swf[.gz] [PROCESSORS] [--clean] [--csv OUT]

Same conventions as topoalloc (so the schedules are the same, job for job):
size = requested processors, else allocated; a missing requested time is
2 x run time; at one instant completions first, then arrivals in trace order,
then one pass; the queue head starts while it fits; otherwise its shadow time
is the earliest expected end at which enough processors are free, counting
every job expected to end at that instant as ended (a job running past its
estimate is expected to end at the next instant); a later job starts now if it
fits and ends by the shadow or fits in the extra processors.  ``--clean`` drops
jobs without a size, wider than the machine or with a run time <= 0, and caps
run times at the requested time, as ``topoalloc simulate --clean``.  Plain
Python, no numpy: what anyone would write first.
"""

import gzip
import heapq
import math
import sys


def read(path, clean=False, n=None):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    jobs, maxprocs = [], None
    with opener(path, "rt") as fh:
        for line in fh:
            if line.startswith(";"):
                if "MaxProcs:" in line:
                    maxprocs = int(line.split(":")[1])
                continue
            f = line.split()
            if len(f) != 18:
                continue
            size = int(f[7]) if int(f[7]) > 0 else int(f[4])
            run, req = float(f[3]), float(f[8])
            if clean:
                if size <= 0 or size > (n or maxprocs) or run <= 0:
                    continue
                if req > 0 and run > req:
                    run = req
            jobs.append((float(f[1]), run, size, req if req > 0 else 2 * run))
    jobs.sort(key=lambda j: j[0])  # stable: trace order among equal submits
    return jobs, maxprocs


def easy(jobs, n):
    free, now, i, queue, running, start = n, 0.0, 0, [], [], [None] * len(jobs)
    ends = []  # heap of (end, job)
    while i < len(jobs) or queue or ends:
        now = min(ends[0][0] if ends else math.inf, jobs[i][0] if i < len(jobs) else math.inf)
        while ends and ends[0][0] <= now:
            _, j = heapq.heappop(ends)
            free += jobs[j][2]
            running.remove(j)
        while i < len(jobs) and jobs[i][0] <= now:
            queue.append(i)
            i += 1
        while queue and jobs[queue[0]][2] <= free:  # heads, in order
            j = queue.pop(0)
            start[j], free = now, free - jobs[j][2]
            running.append(j)
            heapq.heappush(ends, (now + jobs[j][1], j))
        if not queue:
            continue
        # shadow: running jobs by expected end (ties: start order), those ending then all count
        exp = sorted((max(start[j] + jobs[j][3], math.nextafter(now, math.inf)), k, j) for k, j in enumerate(running))
        avail, shadow, k = free, None, 0
        while k < len(exp):
            t = exp[k][0]
            while k < len(exp) and exp[k][0] <= t:
                avail += jobs[exp[k][2]][2]
                k += 1
            if avail >= jobs[queue[0]][2]:
                shadow = t
                break
        extra = avail - jobs[queue[0]][2]
        for j in list(queue[1:]):
            s = jobs[j][2]
            if s > free:
                continue
            ends_by = now + jobs[j][3] <= shadow  # (its expected end, the sum every expected end is)
            if ends_by or s <= extra:
                if not ends_by:
                    extra -= s
                queue.remove(j)
                start[j], free = now, free - s
                running.append(j)
                heapq.heappush(ends, (now + jobs[j][1], j))
    return start


if __name__ == "__main__":
    n = int(sys.argv[2]) if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else None
    jobs, maxprocs = read(sys.argv[1], "--clean" in sys.argv, n)
    n = n or maxprocs
    start = easy(jobs, n)
    waits = [s - j[0] for s, j in zip(start, jobs)]
    print(f"{len(jobs)} jobs, mean wait {sum(waits) / len(waits):.4f}")
    if "--csv" in sys.argv:
        with open(sys.argv[sys.argv.index("--csv") + 1], "w") as fh:
            fh.writelines(f"{s!r}\n" for s in start)
