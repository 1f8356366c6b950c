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
 * Each search asks for signals every 64 centers, so that Ctrl-C stops a long placement (an exception,
 * KeyboardInterrupt, with nothing written to out).
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
static i64 pair_sum(const i64 *h, i64 D, int ring, i64 *scratch) {
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
     * near side delta <= D / 2 at delta, the far side at D - delta; halved at the end.  scratch: 4D + 2 items */
    i64 half = D / 2;
    i64 *p0 = scratch, *p1 = scratch + 2 * D + 1;
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
    return total / 2;
}

/* the set's pairwise L1 sum from its histograms per dimension (ch + choff[i]) */
static i64 pair_sums(const i64 *ch, const i64 *choff, const i64 *dims, const unsigned char *wrap, Py_ssize_t d, i64 *scratch) {
    i64 score = 0;
    for (Py_ssize_t i = 0; i < d; i++) score += pair_sum(ch + choff[i], dims[i], wrap[i], scratch);
    return score;
}

/* the L1 (linf = 0) or L-infinity distance of two points, each side the shorter way round on a ring */
static inline i64 distance(const i64 *x, const i64 *y, const i64 *dims, const unsigned char *wrap, Py_ssize_t d, int linf) {
    i64 s = 0;
    for (Py_ssize_t i = 0; i < d; i++) {
        i64 a = x[i] - y[i];
        if (a < 0) a = -a;
        if (wrap[i] && dims[i] - a < a) a = dims[i] - a;
        if (linf) { if (a > s) s = a; } else s += a;
    }
    return s;
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
    i64 *dist = NULL, *hist = NULL, *ch = NULL, *choff = NULL, *scratch = NULL;
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
    scratch = malloc((size_t)(4 * sumD + 2) * sizeof(i64));
    if (!dist || !hist || !ch || !choff || !scratch) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0, o = 0; i < d; o += dims[i], i++) choff[i] = o;
    i64 best = -1, best_score = 0, bestR = 0, best_below = 0;
    for (Py_ssize_t c = 0; c < C; c++) {
        if ((c & 63) == 63 && PyErr_CheckSignals() < 0) goto done; /* (Ctrl-C: a placement on a large machine takes seconds) */
        const i64 *x = cc + c * d;
        for (Py_ssize_t f = 0; f < F; f++) hist[dist[f] = distance(x, fc + f * d, dims, wrap, d, mc)]++;
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
            score = pair_sums(ch, choff, dims, wrap, d, scratch);
        }
        if (best < 0 || score < best_score) { best = c; best_score = score; bestR = R; best_below = below; }
    }
    /* the winner's set: the nearer ones and the first ties, in node-id order */
    {
        const i64 *x = cc + best * d;
        i64 n = 0, t = k - best_below;
        for (Py_ssize_t f = 0; f < F; f++) {
            i64 s = distance(x, fc + f * d, dims, wrap, d, mc);
            if (s < bestR || (s == bestR && t-- > 0)) out[n++] = f;
        }
    }
    ret = Py_BuildValue("(LL)", (long long)best, (long long)best_score);
done:
    free(dist);
    free(hist);
    free(ch);
    free(choff);
    free(scratch);
    PyBuffer_Release(&bc);
    PyBuffer_Release(&bf);
    PyBuffer_Release(&bd);
    PyBuffer_Release(&bw);
    PyBuffer_Release(&bo);
    return ret;
}

/* ------------------------------------------- the arguments of shells() and lines() */

/* (free, strides, centers, dims, wrap, k, out): the buffers, read and checked */
typedef struct {
    Py_buffer b[6];
    int held;
    const unsigned char *fr, *wrap;
    const i64 *st, *cc, *dims;
    i64 *out;
    Py_ssize_t C, d, N, k;
    i64 F;
} Grid;

static void grid_close(Grid *g) {
    for (int i = 0; i < g->held; i++) PyBuffer_Release(&g->b[i]);
    g->held = 0;
}

/* 0, or -1 with an exception set (and nothing held) */
static int grid_open(PyObject *args, Grid *g) {
    PyObject *o[6];
    g->held = 0;
    if (!PyArg_ParseTuple(args, "OOOOOnO", &o[0], &o[1], &o[2], &o[3], &o[4], &g->k, &o[5])) return -1;
    static const char *names[6] = {"free", "strides", "centers", "dims", "wrap", "out"};
    static const Py_ssize_t items[6] = {1, 8, 8, 8, 1, 8};
    static const int ndims[6] = {1, 1, 2, 1, 1, 1};
    for (int i = 0; i < 6; i++) {
        if (get(o[i], &g->b[i], items[i], ndims[i], i == 5, names[i]) < 0) { grid_close(g); return -1; }
        g->held++;
    }
    g->fr = g->b[0].buf;
    g->st = g->b[1].buf;
    g->cc = g->b[2].buf;
    g->dims = g->b[3].buf;
    g->wrap = g->b[4].buf;
    g->out = g->b[5].buf;
    g->C = g->b[2].shape[0];
    g->d = g->b[2].shape[1];
    g->N = g->b[0].shape[0];
    Py_ssize_t d = g->d;
    if (g->b[1].shape[0] != d || g->b[3].shape[0] != d || g->b[4].shape[0] != d || d < 1 || d > 16) {
        PyErr_SetString(PyExc_ValueError, "strides, centers, dims and wrap: one coordinate per dimension (at most 16)");
        grid_close(g);
        return -1;
    }
    i64 nodes = 1;
    for (Py_ssize_t i = 0; i < d; i++) {
        if (g->dims[i] < 1) { PyErr_SetString(PyExc_ValueError, "dims: every side at least 1"); grid_close(g); return -1; }
        if (g->st[i] != nodes) {
            PyErr_SetString(PyExc_ValueError, "strides: the first side fastest, each the product of the sides before it");
            grid_close(g);
            return -1;
        }
        nodes *= g->dims[i];
    }
    if (nodes != g->N) {
        PyErr_Format(PyExc_ValueError, "free: %zd nodes, the sides hold %lld", g->N, (long long)nodes);
        grid_close(g);
        return -1;
    }
    g->F = 0;
    for (Py_ssize_t v = 0; v < g->N; v++) g->F += g->fr[v] != 0;
    if (g->C < 1 || g->k < 1 || g->k > g->F || g->b[5].shape[0] != g->k) {
        PyErr_Format(PyExc_ValueError, "expected a center, 0 < k <= %lld free processors and out of k items (C = %zd, k = %zd, out %zd)",
                     (long long)g->F, g->C, g->k, g->b[5].shape[0]);
        grid_close(g);
        return -1;
    }
    for (Py_ssize_t x = 0; x < g->C * d; x++)
        if (g->cc[x] < 0 || g->cc[x] >= g->dims[x % d]) { PyErr_SetString(PyExc_ValueError, "a coordinate outside its side"); grid_close(g); return -1; }
    return 0;
}

/* the winner's set, center x: the free processors nearer than R and the first t at R, in node-id order, written
 * to out as their places among the free processors; 0, or -1 on no memory */
static int grid_set(const Grid *g, const i64 *x, int linf, i64 R, i64 t) {
    i64 *y = malloc((size_t)g->d * sizeof(i64)), n = 0, f = 0;
    if (!y) { PyErr_NoMemory(); return -1; }
    for (i64 v = 0; v < g->N; v++) {
        if (!g->fr[v]) continue;
        for (Py_ssize_t i = 0; i < g->d; i++) y[i] = (v / g->st[i]) % g->dims[i];
        i64 s = distance(x, y, g->dims, g->wrap, g->d, linf);
        if (s < R || (s == R && t-- > 0)) g->out[n++] = f;
        f++;
    }
    free(y);
    return 0;
}

/* ------------------------------------------------------------------ MC1x1 by shells */

PyDoc_STRVAR(shells_doc,
"shells(free, strides, centers, dims, wrap, k, out) -> (index, score)\n\n"
"best() for MC1x1 (L-infinity), counting each center's shells on a summed-area table of the free\n"
"processors (free: one byte per node, node ids by strides) instead of measuring every free processor:\n"
"the same index, score and set (indices into the free processors in node-id order, written to out).");

/* An L-infinity ball is a box, one interval per dimension (on a ring, the cyclic interval [c - r, c + r], or
 * the whole ring once 2r + 1 >= D), so each shell's count is a difference of box counts, each 2**d corners of
 * a summed-area table.  A ring's side is doubled in the table (a cell at e counts the node at e mod D), so
 * that a cyclic interval is a plain one, from c - r (c - r + D if that is negative) on.  R, the count below it and the score follow
 * as in best(); the set, for the winner only, as there. */
static PyObject *py_shells(PyObject *self, PyObject *args) {
    (void)self;
    Grid g;
    if (grid_open(args, &g) < 0) return NULL;
    PyObject *ret = NULL;
    i64 *S = NULL, *sst = NULL, *sz = NULL, *lo = NULL, *hi = NULL, *e = NULL;
    Py_ssize_t C = g.C, d = g.d, k = g.k;
    const unsigned char *fr = g.fr, *wrap = g.wrap;
    const i64 *st = g.st, *cc = g.cc, *dims = g.dims;
    i64 total = 1;
    for (Py_ssize_t i = 0; i < d; i++) total *= (wrap[i] ? 2 * dims[i] : dims[i]) + 1;
    S = calloc((size_t)total, sizeof(i64));
    sst = malloc((size_t)d * sizeof(i64));
    sz = malloc((size_t)d * sizeof(i64));
    lo = malloc((size_t)d * sizeof(i64));
    hi = malloc((size_t)d * sizeof(i64));
    e = calloc((size_t)d, sizeof(i64));
    if (!S || !sst || !sz || !lo || !hi || !e) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < d; i++) {
        sz[i] = (wrap[i] ? 2 * dims[i] : dims[i]) + 1;
        sst[i] = i ? sst[i - 1] * sz[i - 1] : 1;
    }
    /* the table: S[x + 1] (each coordinate one on) is the node at x mod D, then prefix sums along each side */
    for (;;) {
        i64 node = 0, at = 0;
        for (Py_ssize_t i = 0; i < d; i++) {
            node += (e[i] % dims[i]) * st[i];
            at += (e[i] + 1) * sst[i];
        }
        S[at] = fr[node] != 0;
        Py_ssize_t i = 0;
        while (i < d && ++e[i] == sz[i] - 1) e[i++] = 0;
        if (i == d) break;
    }
    for (Py_ssize_t i = 0; i < d; i++)
        for (i64 x = 0; x < total; x++)
            if ((x / sst[i]) % sz[i]) S[x] += S[x - sst[i]];
    i64 best = -1, best_score = 0, bestR = 0, best_below = 0;
    for (Py_ssize_t c = 0; c < C; c++) {
        if ((c & 63) == 63 && PyErr_CheckSignals() < 0) goto done; /* (Ctrl-C: a placement on a large machine takes seconds) */
        const i64 *x = cc + c * d;
        i64 r = 0, below = 0, wsum = 0;
        for (;; r++) {
            for (Py_ssize_t i = 0; i < d; i++) {
                i64 D = dims[i];
                if (!wrap[i]) { lo[i] = x[i] - r < 0 ? 0 : x[i] - r; hi[i] = x[i] + r + 1 > D ? D : x[i] + r + 1; }
                else if (2 * r + 1 >= D) { lo[i] = 0; hi[i] = D; }
                else { lo[i] = x[i] - r < 0 ? x[i] - r + D : x[i] - r; hi[i] = lo[i] + 2 * r + 1; } /* (< 2D: 2r + 1 < D) */
            }
            i64 n = 0;
            for (i64 m = 0; m < ((i64)1 << d); m++) {
                i64 at = 0;
                int odd = 0;
                for (Py_ssize_t i = 0; i < d; i++) {
                    if (m >> i & 1) at += hi[i] * sst[i];
                    else { at += lo[i] * sst[i]; odd ^= 1; }
                }
                n += odd ? -S[at] : S[at];
            }
            if (n >= k) break;
            wsum += r * (n - below);
            below = n;
        }
        i64 score = wsum + r * (k - below);
        if (best < 0 || score < best_score) { best = c; best_score = score; bestR = r; best_below = below; }
    }
    if (grid_set(&g, cc + best * d, 1, bestR, k - best_below) < 0) goto done;
    ret = Py_BuildValue("(LL)", (long long)best, (long long)best_score);
done:
    free(S);
    free(sst);
    free(sz);
    free(lo);
    free(hi);
    free(e);
    grid_close(&g);
    return ret;
}

/* ------------------------------------------------------- Gen-Alg and MM by lines */

PyDoc_STRVAR(lines_doc,
"lines(free, strides, centers, dims, wrap, k, out) -> (index, score)\n\n"
"best() for Gen-Alg and MM (L1, pairwise sums), by the machine's lines along its first side (free: one byte\n"
"per node, the first side fastest): the same index, score and set, without measuring every free processor\n"
"from every center.");

/* A line is the nodes that differ only in the first coordinate; line l holds nodes l*D0 .. l*D0 + D0 - 1, so
 * lines in order, and positions along a line in order, are node-id order.  From a center c, a line at L1
 * distance e in the other coordinates holds the free processors within t of c0 along it at distance <= e + t:
 * with per-line prefix counts (a ring's line doubled, so a cyclic interval is a plain one) the count within r
 * of c is a sum over lines of one difference each, which gives R by bisection.  The set: on each line the free
 * positions within R - 1 - e (walked through the line's list of free positions), then the ties at distance R,
 * line by line, each line's two positions c0 - t, c0 + t (t = R - e) in increasing order, while any is wanted;
 * its histograms per dimension, then the pair sums, as in best().  Per center: the lines' distances, the
 * bisection, and the set's own processors, instead of every free processor. */

typedef struct {
    i64 D0, E0, nl;           /* the first side, its doubled length on a ring, the lines */
    int ring0;
    const i64 *P;             /* nl x (E0 + 1): free positions below x on line l (x mod D0 beyond D0) */
    const i64 *pos, *off;     /* each line's free positions, ascending: pos[off[l]] .. pos[off[l + 1] - 1] */
} Lines;

/* the positions along a line within t of c0 (t >= 0): [*lo, *hi) of the (doubled) line */
static inline void line_span(const Lines *L, i64 c0, i64 t, i64 *lo, i64 *hi) {
    if (!L->ring0) { *lo = c0 - t < 0 ? 0 : c0 - t; *hi = c0 + t + 1 > L->D0 ? L->D0 : c0 + t + 1; }
    else if (2 * t + 1 >= L->D0) { *lo = 0; *hi = L->D0; }
    else { *lo = c0 - t < 0 ? c0 - t + L->D0 : c0 - t; *hi = *lo + 2 * t + 1; }
}

/* free processors within L1 distance r of the center (e: each line's distance in the other coordinates) */
static i64 count_within(const Lines *L, const i64 *e, i64 c0, i64 r) {
    i64 n = 0;
    for (i64 l = 0; l < L->nl; l++) {
        if (e[l] > r) continue;
        i64 lo, hi;
        line_span(L, c0, r - e[l], &lo, &hi);
        const i64 *p = L->P + l * (L->E0 + 1);
        n += p[hi] - p[lo];
    }
    return n;
}

/* each line's L1 distance from center x in the coordinates but the first (lc: the lines' other coordinates) */
static void line_distances(const Lines *L, const i64 *lc, const i64 *x, const i64 *dims, const unsigned char *wrap, Py_ssize_t d, i64 *e) {
    for (i64 l = 0; l < L->nl; l++) {
        i64 s = 0;
        for (Py_ssize_t i = 1; i < d; i++) {
            i64 a = x[i] - lc[l * (d - 1) + i - 1];
            if (a < 0) a = -a;
            if (wrap[i] && dims[i] - a < a) a = dims[i] - a;
            s += a;
        }
        e[l] = s;
    }
}

/* R: the least r with k free processors within it, by bisection in [lo, hi], which must hold it (every free one
 * is within maxd, and there are k: 0 and maxd do) */
static i64 radius(const Lines *L, const i64 *e, i64 c0, i64 lo, i64 hi, i64 k) {
    while (lo < hi) {
        i64 mid = lo + (hi - lo) / 2;
        if (count_within(L, e, c0, mid) >= k) hi = mid; else lo = mid + 1;
    }
    return lo;
}

static PyObject *py_lines(PyObject *self, PyObject *args) {
    (void)self;
    Grid g;
    if (grid_open(args, &g) < 0) return NULL;
    PyObject *ret = NULL;
    i64 *P = NULL, *pos = NULL, *off = NULL, *lc = NULL, *e = NULL, *ch = NULL, *choff = NULL, *scratch = NULL;
    Py_ssize_t C = g.C, d = g.d, N = g.N, k = g.k;
    const unsigned char *fr = g.fr, *wrap = g.wrap;
    const i64 *st = g.st, *cc = g.cc, *dims = g.dims;
    i64 F = g.F, maxd = 0, sumD = 0;
    for (Py_ssize_t i = 0; i < d; i++) {
        maxd += wrap[i] ? dims[i] / 2 : dims[i] - 1;
        sumD += dims[i];
    }
    Lines L;
    L.D0 = dims[0];
    L.ring0 = wrap[0] != 0;
    L.E0 = L.ring0 ? 2 * L.D0 : L.D0;
    L.nl = N / L.D0;
    P = malloc((size_t)(L.nl * (L.E0 + 1)) * sizeof(i64));
    pos = malloc((size_t)(F ? F : 1) * sizeof(i64));
    off = malloc((size_t)(L.nl + 1) * sizeof(i64));
    lc = malloc((size_t)(L.nl * (d > 1 ? d - 1 : 1)) * sizeof(i64));
    e = malloc((size_t)L.nl * sizeof(i64));
    ch = malloc((size_t)sumD * sizeof(i64));
    choff = malloc((size_t)d * sizeof(i64));
    scratch = malloc((size_t)(4 * sumD + 2) * sizeof(i64));
    if (!P || !pos || !off || !lc || !e || !ch || !choff || !scratch) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0, o = 0; i < d; o += dims[i], i++) choff[i] = o;
    for (i64 l = 0, n = 0; l < L.nl; l++) {
        i64 *p = P + l * (L.E0 + 1);
        const unsigned char *line = fr + l * L.D0;
        p[0] = 0;
        for (i64 x = 0; x < L.E0; x++) p[x + 1] = p[x] + (line[x < L.D0 ? x : x - L.D0] != 0);
        off[l] = n;
        for (i64 x = 0; x < L.D0; x++)
            if (line[x]) pos[n++] = x;
        off[l + 1] = n;
        for (Py_ssize_t i = 1; i < d; i++) lc[l * (d - 1) + i - 1] = (l * L.D0 / st[i]) % dims[i];
    }
    L.P = P;
    L.pos = pos;
    L.off = off;
    i64 best = -1, best_score = 0, lastR = 0;
    const i64 *last = NULL; /* the last center, and its R */
    for (Py_ssize_t c = 0; c < C; c++) {
        if ((c & 63) == 63 && PyErr_CheckSignals() < 0) goto done; /* (Ctrl-C: a placement on a large machine takes seconds) */
        const i64 *x = cc + c * d;
        i64 c0 = x[0], lo = 0, hi = maxd;
        /* Centers come in node-id order, so a run of them often lies on one line (the same coordinates but the
         * first): their lines' distances are the last center's, and the k-th nearest's distance moves by at
         * most the step along the line, dx (every distance does: the triangle inequality), so R is
         * bisected within dx of the last one's */
        if (last && !memcmp(x + 1, last + 1, (size_t)(d - 1) * sizeof(i64))) {
            i64 dx = c0 > last[0] ? c0 - last[0] : last[0] - c0;
            if (L.ring0 && L.D0 - dx < dx) dx = L.D0 - dx;
            lo = lastR > dx ? lastR - dx : 0;
            hi = lastR + dx < maxd ? lastR + dx : maxd;
        } else line_distances(&L, lc, x, dims, wrap, d, e);
        i64 R = radius(&L, e, c0, lo, hi, k), need = k - (R ? count_within(&L, e, c0, R - 1) : 0);
        last = x;
        lastR = R;
        memset(ch, 0, (size_t)sumD * sizeof(i64));
        for (i64 l = 0; l < L.nl; l++) {
            if (e[l] > R) continue;
            i64 taken = 0, cnt = off[l + 1] - off[l];
            const i64 *p = P + l * (L.E0 + 1), *lp = pos + off[l];
            if (e[l] < R) { /* the free positions within R - 1 - e along the line */
                i64 a, b;
                line_span(&L, c0, R - 1 - e[l], &a, &b);
                for (i64 j = p[a]; j < p[b]; j++) ch[lp[j < cnt ? j : j - cnt]]++;
                taken = p[b] - p[a];
            }
            if (need > 0) { /* the ties: positions at exactly R - e along it, in increasing order */
                i64 t = R - e[l], u[2], nu = 0;
                if (!L.ring0) {
                    if (c0 - t >= 0) u[nu++] = c0 - t;
                    if (t && c0 + t < L.D0) u[nu++] = c0 + t;
                } else if (2 * t <= L.D0) { /* (0 <= c0 < D0 and t <= D0 / 2: one wrap at most, no division) */
                    i64 a = c0 - t < 0 ? c0 - t + L.D0 : c0 - t, b = c0 + t >= L.D0 ? c0 + t - L.D0 : c0 + t;
                    u[nu++] = a < b ? a : b;
                    if (a != b) u[nu++] = a < b ? b : a;
                }
                for (i64 q = 0; q < nu && need > 0; q++)
                    if (fr[l * L.D0 + u[q]]) { ch[u[q]]++; taken++; need--; }
            }
            if (taken)
                for (Py_ssize_t i = 1; i < d; i++) ch[choff[i] + lc[l * (d - 1) + i - 1]] += taken;
        }
        i64 score = pair_sums(ch, choff, dims, wrap, d, scratch);
        if (best < 0 || score < best_score) { best = c; best_score = score; }
    }
    /* the winner's set: its R and the count below it again, then the free processors nearer than R and the
     * first at R, in node-id order */
    {
        const i64 *x = cc + best * d;
        line_distances(&L, lc, x, dims, wrap, d, e);
        i64 R = radius(&L, e, x[0], 0, maxd, k);
        if (grid_set(&g, x, 0, R, k - (R ? count_within(&L, e, x[0], R - 1) : 0)) < 0) goto done;
    }
    ret = Py_BuildValue("(LL)", (long long)best, (long long)best_score);
done:
    free(P);
    free(pos);
    free(off);
    free(lc);
    free(e);
    free(ch);
    free(choff);
    free(scratch);
    grid_close(&g);
    return ret;
}

static PyMethodDef methods[] = {
    {"best", py_best, METH_VARARGS, best_doc},
    {"shells", py_shells, METH_VARARGS, shells_doc},
    {"lines", py_lines, METH_VARARGS, lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ccenter", "Compiled search of the center-based allocators (see center.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ccenter(void) { return PyModule_Create(&module); }
