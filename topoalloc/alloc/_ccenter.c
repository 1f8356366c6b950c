/* The center-based allocators' search (center.py: CenterAllocator._allocate), compiled.
 *
 * best(centers, fc, dims, wrap, mc1x1, k, out) -> (index, score)
 *
 * For each candidate center in order (centers: C x d coordinates, int64), the k free processors
 * closest to it (fc: F x d coordinates of the free processors in node-id order, int64), closeness
 * the L1 distance (mc1x1 = 0: Gen-Alg and MM) or the L-infinity one (mc1x1 = 1), each dimension's
 * distance the shorter way round where wrap[i] (uint8) is set; ties in distance go to the lower
 * node id, so the k are those nearer than the k-th one's distance R and the first of those at R in
 * node-id order.  The set's score: the sum of its distances to the center (mc1x1), else the sum over
 * its unordered pairs of their L1 distance.  The first center of least score wins (a later one only
 * with a strictly smaller score); its k processors go to `out` (int64, k) as indices into fc, ascending.
 *
 * This is the numpy path's answer (center.py keeps it, the tested reference) without its (C x F)
 * arrays and partial sorts: distances are small integers, so the k nearest are found by counting
 * them per distance (a histogram), and a set's pairwise sum, per dimension, from the histogram of its
 * coordinates (on a line: sum over values j of h_j (j S0_j - S1_j), S the counts and weighted counts
 * below j; on a ring, the same over the half-ring either way, on the doubled histogram).  Every
 * quantity is an integer computed exactly, so the scores, the winner and the set are the same.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

static int get(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, int ndim, int writable, const char *name) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (b->itemsize != itemsize || b->ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: expected a C-contiguous %d-dimensional array of %zd-byte items", name, ndim, itemsize);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* the sum over unordered pairs of a set's distances in one dimension of D values, from the histogram h
 * of its coordinates there (a line, or a ring: the shorter way round) */
static i64 pair_sum(const i64 *h, i64 D, int ring) {
    i64 total = 0;
    if (!ring) {
        i64 s0 = 0, s1 = 0; /* the count and the sum of the values below j */
        for (i64 j = 0; j < D; j++) {
            if (h[j]) total += h[j] * (j * s0 - s1);
            s0 += h[j];
            s1 += j * h[j];
        }
        return total;
    }
    /* ordered pairs (a, a + delta mod D), delta = 1 .. D - 1, each at distance min(delta, D - delta): the
     * near side delta <= D / 2 at delta, the far side at D - delta; halved at the end */
    i64 half = D / 2;
    i64 *p0 = malloc((size_t)(2 * D + 1) * sizeof(i64)), *p1 = malloc((size_t)(2 * D + 1) * sizeof(i64));
    if (!p0 || !p1) { free(p0); free(p1); return -1; }
    p0[0] = p1[0] = 0;
    for (i64 j = 0; j < 2 * D; j++) { /* prefix sums of the doubled histogram: counts, and counts by index */
        i64 x = h[j < D ? j : j - D];
        p0[j + 1] = p0[j] + x;
        p1[j + 1] = p1[j] + j * x;
    }
    for (i64 a = 0; a < D; a++) {
        if (!h[a]) continue;
        i64 lo = a + 1, mid = a + half + 1, hi = a + D; /* near: [lo, mid); far: [mid, hi) */
        i64 near = (p1[mid] - p1[lo]) - a * (p0[mid] - p0[lo]);
        i64 far = (D + a) * (p0[hi] - p0[mid]) - (p1[hi] - p1[mid]);
        total += h[a] * (near + far);
    }
    free(p0);
    free(p1);
    return total / 2;
}

PyDoc_STRVAR(best_doc,
"best(centers, fc, dims, wrap, mc1x1, k, out) -> (index, score)\n\n"
"The first center of least score and its score; its k nearest free processors (indices into fc,\n"
"ascending) written to out.  centers (C, d) and fc (F, d) int64 coordinates, dims (d,) int64, wrap\n"
"(d,) uint8, out (k,) int64; 0 < k <= F and C > 0.  See center.py.");

static PyObject *py_best(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *oc, *of, *od, *ow, *oo;
    int mc;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOOOpnO", &oc, &of, &od, &ow, &mc, &k, &oo)) return NULL;
    Py_buffer bc, bf, bd, bw, bo;
    if (get(oc, &bc, 8, 2, 0, "centers") < 0) return NULL;
    if (get(of, &bf, 8, 2, 0, "fc") < 0) { PyBuffer_Release(&bc); return NULL; }
    if (get(od, &bd, 8, 1, 0, "dims") < 0) { PyBuffer_Release(&bc); PyBuffer_Release(&bf); return NULL; }
    if (get(ow, &bw, 1, 1, 0, "wrap") < 0) { PyBuffer_Release(&bc); PyBuffer_Release(&bf); PyBuffer_Release(&bd); return NULL; }
    if (get(oo, &bo, 8, 1, 1, "out") < 0) { PyBuffer_Release(&bc); PyBuffer_Release(&bf); PyBuffer_Release(&bd); PyBuffer_Release(&bw); return NULL; }
    PyObject *ret = NULL;
    i64 *dist = NULL, *hist = NULL, *ch = NULL, *choff = NULL;
    Py_ssize_t C = bc.shape[0], d = bc.shape[1], F = bf.shape[0];
    const i64 *cc = bc.buf, *fc = bf.buf, *dims = bd.buf;
    const unsigned char *wrap = bw.buf;
    i64 *out = bo.buf;
    if (bf.shape[1] != d || bd.shape[0] != d || bw.shape[0] != d || d < 1) {
        PyErr_SetString(PyExc_ValueError, "centers, fc, dims and wrap: one coordinate per dimension");
        goto done;
    }
    if (C < 1 || k < 1 || k > F || bo.shape[0] != k) {
        PyErr_Format(PyExc_ValueError, "expected a center, 0 < k <= %zd free processors and out of k items (C = %zd, k = %zd, out %zd)", F, C, k, bo.shape[0]);
        goto done;
    }
    /* the largest distance there is: the bins of the histogram of distances */
    i64 maxd = 0, sumD = 0;
    for (Py_ssize_t i = 0; i < d; i++) {
        if (dims[i] < 1) { PyErr_SetString(PyExc_ValueError, "dims: every side at least 1"); goto done; }
        i64 m = wrap[i] ? dims[i] / 2 : dims[i] - 1;
        maxd = mc ? (m > maxd ? m : maxd) : maxd + m;
        sumD += dims[i];
    }
    for (Py_ssize_t x = 0; x < (C + F) * d; x++) {
        i64 v = x < C * d ? cc[x] : fc[x - C * d], D = dims[x % d];
        if (v < 0 || v >= D) { PyErr_SetString(PyExc_ValueError, "a coordinate outside its side"); goto done; }
    }
    dist = malloc((size_t)F * sizeof(i64));
    hist = calloc((size_t)maxd + 1, sizeof(i64));
    ch = malloc((size_t)sumD * sizeof(i64));
    choff = malloc((size_t)d * sizeof(i64));
    if (!dist || !hist || !ch || !choff) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0, o = 0; i < d; o += dims[i], i++) choff[i] = o;
    i64 best = -1, best_score = 0;
    for (Py_ssize_t c = 0; c < C; c++) {
        const i64 *x = cc + c * d;
        for (Py_ssize_t f = 0; f < F; f++) {
            const i64 *y = fc + f * d;
            i64 s = 0;
            for (Py_ssize_t i = 0; i < d; i++) {
                i64 a = x[i] - y[i];
                if (a < 0) a = -a;
                if (wrap[i] && dims[i] - a < a) a = dims[i] - a;
                if (mc) { if (a > s) s = a; } else s += a;
            }
            dist[f] = s;
            hist[s]++;
        }
        /* R: the k-th nearest's distance; below: how many are nearer */
        i64 R = 0, below = 0, wsum = 0;
        while (below + hist[R] < k) { below += hist[R]; wsum += R * hist[R]; R++; }
        memset(hist, 0, ((size_t)maxd + 1) * sizeof(i64));
        i64 score;
        if (mc) score = wsum + R * (k - below);
        else {
            memset(ch, 0, (size_t)sumD * sizeof(i64));
            i64 ties = k - below;
            for (Py_ssize_t f = 0; f < F; f++) {
                if (dist[f] > R || (dist[f] == R && ties-- <= 0)) continue;
                const i64 *y = fc + f * d;
                for (Py_ssize_t i = 0; i < d; i++) ch[choff[i] + y[i]]++;
            }
            score = 0;
            for (Py_ssize_t i = 0; i < d; i++) {
                i64 p = pair_sum(ch + choff[i], dims[i], wrap[i]);
                if (p < 0) { PyErr_NoMemory(); goto done; }
                score += p;
            }
        }
        if (best < 0 || score < best_score) {
            best = c;
            best_score = score;
            /* its set: the nearer ones and the first ties, in node-id order */
            i64 n = 0, t = k - below;
            for (Py_ssize_t f = 0; f < F; f++)
                if (dist[f] < R || (dist[f] == R && t-- > 0)) out[n++] = f;
        }
    }
    ret = Py_BuildValue("(LL)", (long long)best, (long long)best_score);
done:
    free(dist);
    free(hist);
    free(ch);
    free(choff);
    PyBuffer_Release(&bc);
    PyBuffer_Release(&bf);
    PyBuffer_Release(&bd);
    PyBuffer_Release(&bw);
    PyBuffer_Release(&bo);
    return ret;
}

static PyMethodDef methods[] = {
    {"best", py_best, METH_VARARGS, best_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ccenter", "Compiled search of the center-based allocators (see center.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ccenter(void) { return PyModule_Create(&module); }
