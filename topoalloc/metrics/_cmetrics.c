/* Locality metrics on grids and hypercubes, compiled (see locality.py): the connected components of
 * jobs' node sets (components), and the spans, extents and pairwise distance sums of jobs on a grid
 * (grid_stats, documented at the function), and the spans and bit counts of jobs on a hypercube
 * (cube_stats, documented at the function).
 *
 * components(nodes, offsets, dims, strides, wrap, stamp, index, state, out) -> None
 *
 * Job j's nodes are nodes[offsets[j]:offsets[j+1]] (distinct node ids of one machine whose id is
 * sum(c_i * strides[i]), coordinates c_i in 0 .. dims[i]-1).  Two of a job's nodes are joined
 * when they differ by one step in one dimension (round the wrap link where wrap[i]); a hypercube
 * is the grid of dims (2, ..., 2).  out[j] receives the number of connected components.
 *
 * `stamp` and `index` are int32 work arrays with one entry per node of the machine, kept by the
 * caller between calls: a node belongs to the job being counted iff stamp[node] == that job's
 * token, so nothing is cleared between jobs.  `state` (int64, one item) holds the last token used and
 * is updated here, under the GIL with the stamps, so threads sharing the work arrays cannot reuse a
 * token (the stamps are cleared when tokens would overflow).  Union-find with path halving over runs
 * (nodes next in the list whose ids are one apart along the dimension of stride 1), stopping once the
 * job is one piece: O(k * dims) per job of k nodes; a list sorted by id is searched by its runs alone,
 * without stamps, in O(k + runs * dims) (count_components).  grid_stats counts them the same way.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAXD 32

static Py_ssize_t find(int32_t *parent, Py_ssize_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static int get(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, int writable, const char *name) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (b->itemsize != itemsize || b->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: expected a one-dimensional array of %zd-byte items", name, itemsize);
        PyBuffer_Release(b);
        b->obj = NULL;
        return -1;
    }
    return 0;
}

static int ints(PyObject *seq, long long *out, Py_ssize_t *n, const char *name) {
    PyObject *f = PySequence_Fast(seq, name);
    if (!f) return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(f);
    if (m < 1 || m > MAXD) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "%s: expected 1 to %d values, got %zd", name, MAXD, m);
        return -1;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
        if (out[i] == -1 && PyErr_Occurred()) { Py_DECREF(f); return -1; }
    }
    Py_DECREF(f);
    *n = m;
    return 0;
}

/* The longest job of a CSR layout (offsets[0..m]), or -1 with a ValueError if the offsets decrease. */
static long long longest_job(const int64_t *off, Py_ssize_t m) {
    long long longest = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        if (off[j + 1] < off[j]) { PyErr_SetString(PyExc_ValueError, "offsets: expected non-decreasing"); return -1; }
        if (off[j + 1] - off[j] > longest) longest = off[j + 1] - off[j];
    }
    return longest;
}

/* 0 if every v[0..k) is in 0 .. n-1, else -1 with a ValueError naming `what` (node, rank) and the value. */
static int all_in_range(const int64_t *v, Py_ssize_t k, long long n, const char *what) {
    for (Py_ssize_t t = 0; t < k; t++)
        if (v[t] < 0 || v[t] >= n) { PyErr_Format(PyExc_ValueError, "%s %lld out of range 0..%lld", what, (long long)v[t], n - 1); return -1; }
    return 0;
}

/* A grid as the components search reads it: sides, strides, wrap links; shift[i] >= 0 where stride and side
 * are powers of two (a shift and a mask, not a division); co: every node's coordinates, or NULL; unit: the
 * dimension of stride 1 and side at least 2 (ids one apart there are neighbours), or -1. */
typedef struct { Py_ssize_t d, unit; const long long *dims, *strides, *wrap; int shift[MAXD]; const uint16_t *co; long long n; } GridForm;

static void grid_form(GridForm *g, Py_ssize_t d, const long long *dims, const long long *strides, const long long *wrap, const uint16_t *co, long long n) {
    g->d = d; g->dims = dims; g->strides = strides; g->wrap = wrap; g->co = co; g->n = n; g->unit = -1;
    for (Py_ssize_t i = 0; i < d; i++) {
        g->shift[i] = -1;
        if (strides[i] > 0 && (strides[i] & (strides[i] - 1)) == 0 && dims[i] > 0 && (dims[i] & (dims[i] - 1)) == 0) {
            int sh = 0;
            while ((1LL << sh) < strides[i]) sh++;
            g->shift[i] = sh;
        }
        if (strides[i] == 1 && dims[i] >= 2 && g->unit < 0) g->unit = i;
    }
}

static inline long long coord(const GridForm *g, long long x, Py_ssize_t i) {
    long long D = g->dims[i];
    return g->co ? (long long)g->co[x * g->d + i] : g->shift[i] >= 0 ? (x >> g->shift[i]) & (D - 1) : (x / g->strides[i]) % D;
}

/* Union-find's join (path halving in find, the smaller root kept): 1 if a and b were in two pieces. */
static inline int join(int32_t *parent, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t r1 = find(parent, a), r2 = find(parent, b);
    if (r1 == r2) return 0;
    parent[r1 > r2 ? r1 : r2] = (int32_t)(r1 > r2 ? r2 : r1);
    return 1;
}

/* The connected components of one job, nodes v[0..p) (distinct), token tk (see the module notes); parent:
 * scratch of p items.  Nodes next to each other in the list whose ids are one apart along the unit
 * dimension (a sorted list's rows) start joined, as a run, so union-find works on runs: a job's list
 * sorted by id has a few runs per row of it, not a node each.  Then every edge is seen from one end (a
 * step up in one dimension, or round the wrap link), except the steps inside a run; an edge between the
 * same two runs as the last one seen in its dimension is passed over, and the search stops once the
 * job is one piece. */
static Py_ssize_t job_components(const GridForm *g, const int64_t *v, Py_ssize_t p, int32_t tk, int32_t *stamp, int32_t *index, int32_t *parent) {
    const Py_ssize_t d = g->d, u = g->unit;
    Py_ssize_t runs = 0;
    for (Py_ssize_t t = 0; t < p; t++) {
        if (!(u >= 0 && t > 0 && v[t] == v[t - 1] + 1 && coord(g, v[t - 1], u) + 1 < g->dims[u])) {
            parent[runs] = (int32_t)runs;
            runs++;
        }
        stamp[v[t]] = tk;
        index[v[t]] = (int32_t)(runs - 1);
    }
    Py_ssize_t comps = runs;
    int32_t last_a[MAXD], last_b[MAXD];
    for (Py_ssize_t i = 0; i < d; i++) last_a[i] = last_b[i] = -1;
    for (Py_ssize_t t = 0; t < p && comps > 1; t++) {
        long long x = v[t];
        for (Py_ssize_t i = 0; i < d; i++) {
            long long D = g->dims[i], st = g->strides[i], nb;
            if (D < 2) continue;
            long long c = coord(g, x, i);
            if (c + 1 < D) {
                nb = x + st;
                if (i == u && t + 1 < p && v[t + 1] == nb) continue; /* in the run */
            } else if (g->wrap[i]) nb = x - (D - 1) * st;
            else continue;
            if (nb < 0 || nb >= g->n || stamp[nb] != tk) continue;
            int32_t a = index[x], b = index[nb];
            if (a == last_a[i] && b == last_b[i]) continue; /* joined already */
            last_a[i] = a;
            last_b[i] = b;
            comps -= join(parent, a, b);
        }
    }
    return comps;
}

/* The first of runs[0..k) (sorted, disjoint: starts rs, ends re, inclusive) that ends at or after x. */
static Py_ssize_t first_ending_from(const int64_t *re, Py_ssize_t k, long long x) {
    Py_ssize_t lo = 0, hi = k;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (re[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* job_components for a list sorted by id (and a unit dimension): without stamps.  The runs along the unit
 * dimension are the list's maximal stretches of consecutive ids within a row; every other step joins a run
 * to the runs overlapping its image one step up in a dimension (ids + stride: a window that moves up with
 * the run, found by a pointer), or round a wrap link (by bisection); the unit dimension's wrap link joins a
 * run ending a row to the run holding the row's first id.  O(p + runs * dims) work.  rs, re, parent:
 * scratch of p items. */
static Py_ssize_t sorted_components(const GridForm *g, const int64_t *v, Py_ssize_t p, int64_t *rs, int64_t *re, int32_t *parent) {
    const Py_ssize_t d = g->d, u = g->unit;
    const long long Du = g->dims[u];
    Py_ssize_t k = 0;
    for (Py_ssize_t t = 0; t < p; t++) {
        if (t > 0 && v[t] == v[t - 1] + 1 && coord(g, v[t - 1], u) + 1 < Du) { re[k - 1] = v[t]; continue; }
        rs[k] = re[k] = v[t];
        parent[k] = (int32_t)k;
        k++;
    }
    Py_ssize_t comps = k;
    for (Py_ssize_t i = 0; i < d && comps > 1; i++) {
        long long D = g->dims[i], st = g->strides[i];
        if (D < 2) continue;
        if (i == u) { /* only the wrap link: a run that ends a row, to the row's first id */
            if (!g->wrap[i]) continue;
            for (Py_ssize_t r = 0; r < k && comps > 1; r++) {
                if (coord(g, re[r], u) != D - 1) continue;
                long long x = re[r] - (D - 1);
                Py_ssize_t q = first_ending_from(re, k, x);
                if (q < k && rs[q] <= x) comps -= join(parent, r, q);
            }
            continue;
        }
        Py_ssize_t q = 0; /* the first run that may overlap the next image one step up */
        for (Py_ssize_t r = 0; r < k && comps > 1; r++) {
            long long c = coord(g, rs[r], i), lo, hi; /* (the same along the run) */
            Py_ssize_t from;
            if (c + 1 < D) {
                lo = rs[r] + st;
                hi = re[r] + st;
                while (q < k && re[q] < lo) q++;
                from = q;
            } else if (g->wrap[i]) {
                lo = rs[r] - (D - 1) * st;
                hi = re[r] - (D - 1) * st;
                from = first_ending_from(re, k, lo);
            } else continue;
            for (Py_ssize_t w = from; w < k && rs[w] <= hi; w++) comps -= join(parent, r, w);
        }
    }
    return comps;
}

/* A job's components by whichever search fits its list: by runs without stamps if it is sorted by id (and
 * the grid has a unit dimension), else over nodes with the next token.  parent: scratch of p items, runs of
 * 2 * p. */
static Py_ssize_t count_components(const GridForm *g, const int64_t *v, Py_ssize_t p, long long *token, int32_t *stamp, int32_t *index,
                                   int32_t *parent, int64_t *runs) {
    int sorted_ids = g->unit >= 0;
    for (Py_ssize_t t = 1; t < p && sorted_ids; t++) sorted_ids = v[t] > v[t - 1];
    if (sorted_ids) return sorted_components(g, v, p, runs, runs + p, parent);
    return job_components(g, v, p, (int32_t)++*token, stamp, index, parent);
}

/* The next token for the stamps of n nodes, m jobs to come: the stamps cleared when tokens would overflow. */
static long long fresh_tokens(long long token, Py_ssize_t m, int32_t *stamp, Py_ssize_t n) {
    if (token < 0 || token + m >= INT32_MAX) {
        memset(stamp, 0, (size_t)n * sizeof(int32_t));
        return 0;
    }
    return token;
}

PyDoc_STRVAR(components_doc,
"components(nodes, offsets, dims, strides, wrap, stamp, index, state, out[, coords]) -> None\n\n"
"Connected components of every job's nodes on a grid (see the module notes).  coords: None, or every\n"
"node's coordinates (uint16, n x d) to look up instead of dividing.");

static PyObject *py_components(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9 && nargs != 10) return PyErr_Format(PyExc_TypeError, "components: expected 9 or 10 arguments, got %zd", nargs);
    long long dims[MAXD], strides[MAXD], wrap[MAXD];
    Py_ssize_t d, d2, d3;
    if (ints(args[2], dims, &d, "dims") < 0 || ints(args[3], strides, &d2, "strides") < 0 || ints(args[4], wrap, &d3, "wrap") < 0) return NULL;
    if (d2 != d || d3 != d) return PyErr_Format(PyExc_ValueError, "components: dims, strides and wrap differ in length");
    Py_buffer bn = {0}, bo = {0}, bs = {0}, bi = {0}, bout = {0}, bt = {0}, bco = {0};
    PyObject *result = NULL;
    int32_t *parent = NULL;
    int64_t *runs = NULL;
    const uint16_t *co = NULL;
    if (PyObject_GetBuffer(args[0], &bn, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (bn.itemsize != 8 || bn.ndim != 1) { PyErr_SetString(PyExc_ValueError, "nodes: expected int64"); goto done; }
    if (PyObject_GetBuffer(args[1], &bo, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
    if (bo.itemsize != 8 || bo.ndim != 1 || bo.shape[0] < 1) { PyErr_SetString(PyExc_ValueError, "offsets: expected int64, at least one"); goto done; }
    if (get(args[5], &bs, 4, 1, "stamp") < 0 || get(args[6], &bi, 4, 1, "index") < 0 || get(args[7], &bt, 8, 1, "state") < 0 ||
        get(args[8], &bout, 8, 1, "out") < 0) goto done;
    if (bt.shape[0] != 1) { PyErr_SetString(PyExc_ValueError, "state: expected one item"); goto done; }
    long long token = *(int64_t *)bt.buf;
    const int64_t *v = (const int64_t *)bn.buf, *off = (const int64_t *)bo.buf;
    int32_t *stamp = (int32_t *)bs.buf, *index = (int32_t *)bi.buf;
    int64_t *out = (int64_t *)bout.buf;
    Py_ssize_t k = bn.shape[0], m = bo.shape[0] - 1, n = bs.shape[0];
    if (bi.shape[0] != n || bout.shape[0] != m || off[0] != 0 || off[m] != k) { PyErr_SetString(PyExc_ValueError, "components: inconsistent sizes"); goto done; }
    if (nargs == 10 && args[9] != Py_None) {
        if (PyObject_GetBuffer(args[9], &bco, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
        if (bco.itemsize != 2 || bco.len != (Py_ssize_t)(2 * n * d)) { PyErr_SetString(PyExc_ValueError, "coords: expected uint16, n x d"); goto done; }
        co = (const uint16_t *)bco.buf;
    }
    long long longest = longest_job(off, m);
    if (longest < 0 || all_in_range(v, k, n, "node") < 0) goto done;
    parent = (int32_t *)PyMem_Malloc((size_t)(longest ? longest : 1) * sizeof(int32_t));
    runs = (int64_t *)PyMem_Malloc((size_t)(longest ? longest : 1) * 2 * sizeof(int64_t));
    if (!parent || !runs) { PyErr_NoMemory(); goto done; }
    token = fresh_tokens(token, m, stamp, n);
    GridForm g;
    grid_form(&g, d, dims, strides, wrap, co, n);
    for (Py_ssize_t j = 0; j < m; j++)
        out[j] = count_components(&g, v + off[j], off[j + 1] - off[j], &token, stamp, index, parent, runs);
    *(int64_t *)bt.buf = token;
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(parent);
    PyMem_Free(runs);
    if (bn.obj) PyBuffer_Release(&bn);
    if (bo.obj) PyBuffer_Release(&bo);
    if (bs.obj) PyBuffer_Release(&bs);
    if (bi.obj) PyBuffer_Release(&bi);
    if (bout.obj) PyBuffer_Release(&bout);
    if (bt.obj) PyBuffer_Release(&bt);
    if (bco.obj) PyBuffer_Release(&bco);
    return result;
}

static int cmp_ll(const void *x, const void *y) {
    long long a = *(const long long *)x, b = *(const long long *)y;
    return (a > b) - (a < b);
}

/* spans[0..1] of the ranks r[0..p) among n (linear span, ring span), as grid_stats finds them; bits (n bits,
 * all clear) and sorted (p values) are scratch. */
static void spans_of(const int64_t *r, Py_ssize_t p, long long n, uint64_t *bits, long long *sorted, int64_t *spans) {
    long long words = (n + 63) / 64;
    int is_sorted = 1;
    for (Py_ssize_t t = 1; t < p && is_sorted; t++) is_sorted = r[t] >= r[t - 1];
    long long inner = -1, rmin, rmax;
    if (!is_sorted && words <= 8 * p) {
        for (Py_ssize_t t = 0; t < p; t++) bits[r[t] >> 6] |= 1ULL << (r[t] & 63);
        long long prev = -1;
        rmin = -1;
        for (long long wi = 0; wi < words; wi++) {
            uint64_t x = bits[wi];
            bits[wi] = 0;
            while (x) {
                long long q = (wi << 6) + __builtin_ctzll(x);
                x &= x - 1;
                if (prev < 0) rmin = q;
                else if (q - prev - 1 > inner) inner = q - prev - 1;
                prev = q;
            }
        }
        rmax = prev;
    } else {
        if (!is_sorted) {
            memcpy(sorted, r, sizeof(long long) * (size_t)p);
            qsort(sorted, (size_t)p, sizeof(long long), cmp_ll);
            r = (const int64_t *)sorted;
        }
        for (Py_ssize_t t = 1; t < p; t++)
            if (r[t] - r[t - 1] - 1 > inner) inner = r[t] - r[t - 1] - 1;
        rmin = r[0];
        rmax = r[p - 1];
    }
    long long outer = n - 1 - rmax + rmin;
    spans[0] = rmax - rmin + 1;
    spans[1] = n - (inner > outer ? inner : outer);
}

PyDoc_STRVAR(grid_stats_doc,
"grid_stats(nodes, offsets, ranks, n, dims, strides, wrap, coords, spans, extent, pairs[, comps, stamp, index,\n"
"           state]) -> None\n\n"
"Per job of a grid (nodes[offsets[j]:offsets[j+1]], their ranks in the machine's ordering\n"
"ranks[...], int64): spans[j] = (linear span, ring span) of the ranks among n; extent[j, i] =\n"
"the job's extent in dimension i (max - min + 1, or the shortest covering arc where wrap[i]);\n"
"pairs[j] = sum over unordered pairs of nodes of their distance (L1, the shorter way round on\n"
"wrapped dimensions).  All int64, exact; spans (m, 2), extent (m, d), pairs (m,).  The same\n"
"definitions as locality.py's numpy path (_spans, _dim_extent, _pairwise_sum), job by job in\n"
"O(size * d + sum(dims)) (spans: O(size log size) when the ranks are not sorted).  coords: None,\n"
"or every node's coordinates (uint16, n x d) to look up instead of dividing.\n\n"
"With comps (int64, m), also each job's connected components, as components() counts them, with\n"
"its work arrays stamp, index and state; a job that fills its bounding box is one piece without a\n"
"search.");

static PyObject *py_grid_stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 11 && nargs != 15) return PyErr_Format(PyExc_TypeError, "grid_stats: expected 11 or 15 arguments, got %zd", nargs);
    long long dims[MAXD], strides[MAXD], wrap[MAXD];
    Py_ssize_t d, d2, d3;
    long long n = PyLong_AsLongLong(args[3]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (ints(args[4], dims, &d, "dims") < 0 || ints(args[5], strides, &d2, "strides") < 0 || ints(args[6], wrap, &d3, "wrap") < 0) return NULL;
    if (d2 != d || d3 != d) return PyErr_Format(PyExc_ValueError, "grid_stats: dims, strides and wrap differ in length");
    Py_buffer bn = {0}, bo = {0}, br = {0}, bsp = {0}, bex = {0}, bpa = {0}, bco = {0}, bcm = {0}, bst = {0}, bix = {0}, bt = {0};
    PyObject *result = NULL;
    long long *hist = NULL, *pre = NULL, *sorted = NULL;
    int32_t *parent = NULL;
    int64_t *runs = NULL;
    uint64_t *bits = NULL; /* a bit per rank, all clear between jobs */
    if (get(args[0], &bn, 8, 0, "nodes") < 0 || get(args[1], &bo, 8, 0, "offsets") < 0 || get(args[2], &br, 8, 0, "ranks") < 0) goto done;
    const uint16_t *co = NULL;
    if (args[7] != Py_None) {
        if (PyObject_GetBuffer(args[7], &bco, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
        if (bco.itemsize != 2 || bco.len != (Py_ssize_t)(2 * n * d)) { PyErr_SetString(PyExc_ValueError, "coords: expected uint16, n x d"); goto done; }
        co = (const uint16_t *)bco.buf;
    }
    if (PyObject_GetBuffer(args[8], &bsp, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) goto done;
    if (PyObject_GetBuffer(args[9], &bex, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) goto done;
    if (get(args[10], &bpa, 8, 1, "pairs") < 0) goto done;
    Py_ssize_t k = bn.shape[0], m = bo.shape[0] - 1;
    const int64_t *v = (const int64_t *)bn.buf, *off = (const int64_t *)bo.buf, *rk = (const int64_t *)br.buf;
    if (m < 0 || br.shape[0] != k || bpa.shape[0] != m || bsp.itemsize != 8 || bsp.len != (Py_ssize_t)(16 * m) || bex.itemsize != 8 ||
        bex.len != (Py_ssize_t)(8 * m * d) || off[0] != 0 || off[m] != k) {
        PyErr_SetString(PyExc_ValueError, "grid_stats: inconsistent sizes");
        goto done;
    }
    long long total = 0, longest = 0, most = 1;
    for (Py_ssize_t i = 0; i < d; i++) {
        if (dims[i] < 1) { PyErr_SetString(PyExc_ValueError, "dims: expected positive sides"); goto done; }
        total += dims[i];
        if (dims[i] > most) most = dims[i];
    }
    longest = longest_job(off, m);
    if (longest < 0 || all_in_range(v, k, n, "node") < 0 || all_in_range(rk, k, n, "rank") < 0) goto done;
    /* the components, if asked for */
    int64_t *cout = NULL;
    int32_t *stamp = NULL, *index = NULL;
    long long token = 0;
    if (nargs == 15) {
        if (get(args[11], &bcm, 8, 1, "comps") < 0 || get(args[12], &bst, 4, 1, "stamp") < 0 || get(args[13], &bix, 4, 1, "index") < 0 ||
            get(args[14], &bt, 8, 1, "state") < 0) goto done;
        if (bcm.shape[0] != m || bst.shape[0] != n || bix.shape[0] != n || bt.shape[0] != 1) {
            PyErr_SetString(PyExc_ValueError, "grid_stats: inconsistent sizes of comps, stamp, index or state");
            goto done;
        }
        cout = (int64_t *)bcm.buf;
        stamp = (int32_t *)bst.buf;
        index = (int32_t *)bix.buf;
        token = fresh_tokens(*(int64_t *)bt.buf, m, stamp, n);
        parent = (int32_t *)PyMem_Malloc((size_t)(longest ? longest : 1) * sizeof(int32_t));
        runs = (int64_t *)PyMem_Malloc((size_t)(longest ? longest : 1) * 2 * sizeof(int64_t));
        if (!parent || !runs) { PyErr_NoMemory(); goto done; }
    }
    GridForm g;
    grid_form(&g, d, dims, strides, wrap, co, n);
    hist = (long long *)PyMem_Malloc(sizeof(long long) * (size_t)total);
    pre = (long long *)PyMem_Malloc(sizeof(long long) * (size_t)(4 * most + 2));
    sorted = (long long *)PyMem_Malloc(sizeof(long long) * (size_t)(longest ? longest : 1));
    long long words = (n + 63) / 64;
    bits = (uint64_t *)PyMem_Calloc((size_t)words, sizeof(uint64_t));
    if (!hist || !pre || !sorted || !bits) { PyErr_NoMemory(); goto done; }
    int64_t *spans = (int64_t *)bsp.buf, *extent = (int64_t *)bex.buf, *pairs = (int64_t *)bpa.buf;
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_ssize_t a = off[j], p = off[j + 1] - a;
        int64_t *ext = extent + j * d;
        if (p == 0) {
            spans[2 * j] = spans[2 * j + 1] = 0;
            for (Py_ssize_t i = 0; i < d; i++) ext[i] = 0;
            pairs[j] = 0;
            if (cout) cout[j] = 0;
            continue;
        }
        /* spans: the smallest and largest rank and the widest gap between ranks next in order */
        spans_of(rk + a, p, n, bits, sorted, spans + 2 * j);
        /* per dimension: the histogram of coordinates, its extent and its pairwise distance sum */
        memset(hist, 0, sizeof(long long) * (size_t)total);
        long long *h = hist;
        if (co) {
            long long *hs[MAXD];
            for (Py_ssize_t i = 0; i < d; i++) { hs[i] = h; h += dims[i]; }
            for (Py_ssize_t t = 0; t < p; t++) {
                const uint16_t *c = co + v[a + t] * d;
                for (Py_ssize_t i = 0; i < d; i++) hs[i][c[i]]++;
            }
        } else {
            for (Py_ssize_t i = 0; i < d; i++) {
                long long D = dims[i], st = strides[i];
                for (Py_ssize_t t = 0; t < p; t++) h[(v[a + t] / st) % D]++;
                h += D;
            }
        }
        long long sum2 = 0; /* over ordered pairs */
        h = hist;
        for (Py_ssize_t i = 0; i < d; i++) {
            long long D = dims[i];
            long long first = -1, last = -1, maxgap = 0;
            for (long long c = 0; c < D; c++)
                if (h[c]) {
                    if (first < 0) first = c;
                    else if (c - last > maxgap) maxgap = c - last;
                    last = c;
                }
            if (!wrap[i]) {
                ext[i] = last - first + 1;
            } else {
                if (first + D - last > maxgap) maxgap = first + D - last;
                ext[i] = D - maxgap + 1;
            }
            if (first != last) {
                /* prefix counts H and coordinate sums W over the line (twice round where wrapped) */
                long long L = wrap[i] ? 2 * D : D, *H = pre, *W = pre + L + 1;
                H[0] = W[0] = 0;
                for (long long t = 0; t < L; t++) {
                    long long c = t < D ? t : t - D;
                    H[t + 1] = H[t] + h[c];
                    W[t + 1] = W[t] + t * h[c];
                }
                for (long long b = first; b <= last; b++) {
                    if (!h[b]) continue;
                    long long s;
                    if (!wrap[i]) { /* |a - b|: below b, and above */
                        s = (b * H[b] - W[b]) + ((W[D] - W[b + 1]) - b * (H[D] - H[b + 1]));
                    } else { /* a' = b + delta, delta in 0 .. D-1: delta <= D/2 the short way up, else down */
                        long long mid = b + D / 2 + 1, end = b + D;
                        s = (W[mid] - W[b]) - b * (H[mid] - H[b]);
                        s += end * (H[end] - H[mid]) - (W[end] - W[mid]);
                    }
                    sum2 += h[b] * s;
                }
            }
            h += D;
        }
        pairs[j] = sum2 / 2;
        if (cout) {
            long long volume = 1; /* of the bounding box: filled, it is one piece */
            for (Py_ssize_t i = 0; i < d; i++) volume *= ext[i];
            cout[j] = volume == p ? 1 : count_components(&g, v + a, p, &token, stamp, index, parent, runs);
        }
    }
    if (cout) *(int64_t *)bt.buf = token;
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(hist);
    PyMem_Free(pre);
    PyMem_Free(sorted);
    PyMem_Free(bits);
    PyMem_Free(parent);
    PyMem_Free(runs);
    if (bcm.obj) PyBuffer_Release(&bcm);
    if (bst.obj) PyBuffer_Release(&bst);
    if (bix.obj) PyBuffer_Release(&bix);
    if (bt.obj) PyBuffer_Release(&bt);
    if (bn.obj) PyBuffer_Release(&bn);
    if (bo.obj) PyBuffer_Release(&bo);
    if (br.obj) PyBuffer_Release(&br);
    if (bsp.obj) PyBuffer_Release(&bsp);
    if (bex.obj) PyBuffer_Release(&bex);
    if (bpa.obj) PyBuffer_Release(&bpa);
    if (bco.obj) PyBuffer_Release(&bco);
    return result;
}

/* How many integers in 0 .. x-1 have bit b set. */
static long long ones_below(long long x, int b) {
    long long period = 1LL << (b + 1), half = 1LL << b, rest = x & (period - 1);
    return (x >> (b + 1)) * half + (rest > half ? rest - half : 0);
}

PyDoc_STRVAR(cube_stats_doc,
"cube_stats(nodes, offsets, ranks, n, nbits, spans, ones) -> bool\n\n"
"Per job of a hypercube (nodes[offsets[j]:offsets[j+1]], int64, sorted ascending, their ranks in the\n"
"machine's ordering ranks[...]): spans[j] = (linear span, ring span) of the ranks among n, as\n"
"grid_stats finds them; ones[j, b] = how many of the job's nodes have bit b set (b < nbits), counted\n"
"over the job's runs of consecutive ids (a subcube of the low bits is one run).  All int64, exact.\n"
"False (nothing computed) if some job's nodes are not sorted ascending without repeats.");

static PyObject *py_cube_stats(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 7) return PyErr_Format(PyExc_TypeError, "cube_stats: expected 7 arguments, got %zd", nargs);
    long long n = PyLong_AsLongLong(args[3]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    long long nbits = PyLong_AsLongLong(args[4]);
    if (nbits == -1 && PyErr_Occurred()) return NULL;
    if (n < 1 || nbits < 0 || nbits > 62 || (1LL << nbits) < n) return PyErr_Format(PyExc_ValueError, "cube_stats: n=%lld, nbits=%lld", n, nbits);
    Py_buffer bn = {0}, bo = {0}, br = {0}, bsp = {0}, bon = {0};
    PyObject *result = NULL;
    long long *sorted = NULL;
    uint64_t *bits = NULL;
    if (get(args[0], &bn, 8, 0, "nodes") < 0 || get(args[1], &bo, 8, 0, "offsets") < 0 || get(args[2], &br, 8, 0, "ranks") < 0) goto done;
    if (PyObject_GetBuffer(args[5], &bsp, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) goto done;
    if (PyObject_GetBuffer(args[6], &bon, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) goto done;
    Py_ssize_t k = bn.shape[0], m = bo.shape[0] - 1;
    const int64_t *v = (const int64_t *)bn.buf, *off = (const int64_t *)bo.buf, *rk = (const int64_t *)br.buf;
    if (m < 0 || br.shape[0] != k || bsp.itemsize != 8 || bsp.len != (Py_ssize_t)(16 * m) || bon.itemsize != 8 ||
        bon.len != (Py_ssize_t)(8 * m * nbits) || off[0] != 0 || off[m] != k) {
        PyErr_SetString(PyExc_ValueError, "cube_stats: inconsistent sizes");
        goto done;
    }
    long long longest = longest_job(off, m);
    if (longest < 0 || all_in_range(v, k, n, "node") < 0 || all_in_range(rk, k, n, "rank") < 0) goto done;
    for (Py_ssize_t j = 0; j < m; j++)
        for (Py_ssize_t t = off[j] + 1; t < off[j + 1]; t++)
            if (v[t] <= v[t - 1]) { Py_INCREF(Py_False); result = Py_False; goto done; } /* not sorted: the caller's numpy path */
    sorted = (long long *)PyMem_Malloc(sizeof(long long) * (size_t)(longest ? longest : 1));
    bits = (uint64_t *)PyMem_Calloc((size_t)((n + 63) / 64), sizeof(uint64_t));
    if (!sorted || !bits) { PyErr_NoMemory(); goto done; }
    int64_t *spans = (int64_t *)bsp.buf, *ones = (int64_t *)bon.buf;
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_ssize_t a = off[j], p = off[j + 1] - a;
        int64_t *o = ones + j * nbits;
        for (long long b = 0; b < nbits; b++) o[b] = 0;
        if (p == 0) { spans[2 * j] = spans[2 * j + 1] = 0; continue; }
        spans_of(rk + a, p, n, bits, sorted, spans + 2 * j);
        for (Py_ssize_t t = 0; t < p;) { /* a run lo .. hi-1 of consecutive ids */
            Py_ssize_t u = t + 1;
            while (u < p && v[a + u] == v[a + u - 1] + 1) u++;
            long long lo = v[a + t], hi = v[a + u - 1] + 1;
            for (long long b = 0; b < nbits; b++) o[b] += ones_below(hi, (int)b) - ones_below(lo, (int)b);
            t = u;
        }
    }
    Py_INCREF(Py_True);
    result = Py_True;
done:
    PyMem_Free(sorted);
    PyMem_Free(bits);
    if (bn.obj) PyBuffer_Release(&bn);
    if (bo.obj) PyBuffer_Release(&bo);
    if (br.obj) PyBuffer_Release(&br);
    if (bsp.obj) PyBuffer_Release(&bsp);
    if (bon.obj) PyBuffer_Release(&bon);
    return result;
}

static PyMethodDef methods[] = {
    {"components", (PyCFunction)(void (*)(void))py_components, METH_FASTCALL, components_doc},
    {"grid_stats", (PyCFunction)(void (*)(void))py_grid_stats, METH_FASTCALL, grid_stats_doc},
    {"cube_stats", (PyCFunction)(void (*)(void))py_cube_stats, METH_FASTCALL, cube_stats_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cmetrics", "Compiled locality metrics (see locality.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cmetrics(void) { return PyModule_Create(&module); }
