/* The slice allocator's box search on the unit grid, compiled (see slices.py, SliceAllocator).
 *
 * The grid has d dimensions of sides grid[i]; a unit's id is sum(c_i * prod(grid[:i])) (the first
 * dimension fastest).  `cells` holds one value per unit (1-byte or 4-byte unsigned/int items): a
 * unit is free iff its value <= threshold (the busy map with threshold 0; the map of "after how
 * many releases" with threshold k).  A box of sides s at offset o covers, in each dimension i, the
 * units o_i .. o_i + s_i - 1, taken mod grid[i] where wrap[i]; its offsets are, per dimension,
 * 0 only if s_i == grid[i], else 0 .. grid[i] - 1 where wrap[i], else 0 .. grid[i] - s_i.
 * Boxes are visited shape by shape (the rows of `shapes`, int64 (k, d)), offsets first dimension
 * fastest: the order of the sliding-window search and of the placement tables in slices.py.
 *
 * first_box(cells, threshold, grid, wrap, shapes, bits=True) -> (k, offsets) | None
 *     The first box all of whose units are free.
 * all_boxes(cells, threshold, grid, wrap, shapes, bits=True) -> bytes
 *     Every such box, as int64 records (k, o_0, ..., o_{d-1}) in that order.
 * first_clear(sides, offs, grid, box_sides, box_off, lo, hi) -> int
 *     The first row r in lo .. hi - 1 of the boxes (sides[r], offs[r]) (int64 (P, d) each) that does
 *     not meet the box (box_sides, box_off); -1 if every one meets it.  Two boxes meet iff in every
 *     dimension (box_off - o) mod g < s or (o - box_off) mod g < box_s.
 * clear_mask(sides, offs, grid, box_sides, box_off, out) -> int
 *     out[r] = 1 for every row that does not meet the box (out: uint8, P), and how many do not.
 *
 * The search, one dimension at a time: a box of sides s is free at o iff the units o .. o + s_0 - 1
 * along dimension 0 are free from every unit of the box's face o + (0, j_1, ..., j_{d-1}); so the
 * map "free for s_0 along dimension 0" (runs of free units counted backwards along each line,
 * continued round the ring) is made, then from it the map "... and for s_1 along dimension 1", and
 * so on.  O(d * units) per shape whatever its size; shapes sharing their first sides share maps.
 * When grid[0] <= 64 (and bits is true) the maps are bit sets, one 64-bit word per line of
 * dimension 0: along dimension 0 a word is ANDed with itself shifted (rotated within the ring), along
 * the others words are ANDed with the words s_i lines on, both by doubling: O(d * lines * log s)
 * word operations per shape.  bits=False keeps the byte maps (tests compare both).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXD 16

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

/* a C-contiguous buffer of `itemsize`-byte items with `ndim` dimensions (itemsize 0: 1 or 4) */
static int get(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, int ndim, int writable, const char *name) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    int ok = b->ndim == ndim && (itemsize ? b->itemsize == itemsize : (b->itemsize == 1 || b->itemsize == 4));
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "%s: expected a %d-dimensional array of %s items", name, ndim,
                     itemsize == 8 ? "8-byte" : itemsize == 1 ? "1-byte" : "1- or 4-byte");
        PyBuffer_Release(b);
        b->obj = NULL;
        return -1;
    }
    return 0;
}

typedef struct {
    Py_ssize_t d, n;
    long long grid[MAXD], wrap[MAXD], stride[MAXD];
    unsigned char *level; /* (d + 1) maps of n bytes: level[0] the free units, level[i + 1] its boxes so far */
    long long made[MAXD]; /* the sides level[1 ..] were made for (prefix memo across shapes) */
    long long ones[MAXD + 1]; /* set entries of each level (0: the levels after it are not written) */
    Py_ssize_t n_made;
    int32_t *run; /* work: the runs of the lines of one dimension, side by side */
    /* the bit path (grid[0] <= 64): one word per line of dimension 0, bit x for the unit at x */
    int bits;
    Py_ssize_t lines;
    uint64_t mask0; /* the bits of a line */
    uint64_t *wlevel; /* (d + 1) maps of `lines` words, as `level` */
    uint64_t *wtmp;
    /* the maps of each level: a dimension of side 1 changes nothing, so its level is the one before */
    const unsigned char *lev[MAXD + 1];
    const uint64_t *wlev[MAXD + 1];
} Grid;

static void grid_free(Grid *g) {
    free(g->level);
    free(g->run);
    free(g->wlevel);
    free(g->wtmp);
}

#if defined(__GNUC__) || defined(__clang__)
#define CTZ64(w) __builtin_ctzll(w)
#else
static int CTZ64(uint64_t w) {
    int k = 0;
    while (!(w & 1)) { w >>= 1; k++; }
    return k;
}
#endif

/* parse grid and wrap, and mark the free units; -1 with an exception set on error */
static int grid_init(Grid *g, Py_buffer *cells, long long threshold, PyObject *grid, PyObject *wrap, int bits) {
    Py_ssize_t dw;
    g->level = NULL;
    g->run = NULL;
    g->wlevel = NULL;
    g->wtmp = NULL;
    g->n_made = 0;
    if (ints(grid, g->grid, &g->d, "grid") < 0 || ints(wrap, g->wrap, &dw, "wrap") < 0) return -1;
    if (dw != g->d) {
        PyErr_Format(PyExc_ValueError, "wrap: expected %zd values, got %zd", g->d, dw);
        return -1;
    }
    long long n = 1;
    for (Py_ssize_t i = 0; i < g->d; i++) {
        if (g->grid[i] < 1 || g->grid[i] > (1 << 30)) {
            PyErr_Format(PyExc_ValueError, "grid: side %lld out of range", g->grid[i]);
            return -1;
        }
        g->stride[i] = n;
        n *= g->grid[i];
        if (n > (1LL << 31)) {
            PyErr_SetString(PyExc_ValueError, "grid: more than 2**31 units");
            return -1;
        }
    }
    g->n = (Py_ssize_t)n;
    if (cells->shape[0] != g->n) {
        PyErr_Format(PyExc_ValueError, "cells: expected %zd values (the grid's units), got %zd", g->n, cells->shape[0]);
        return -1;
    }
    const unsigned char *c1 = (const unsigned char *)cells->buf;
    const uint32_t *c4 = (const uint32_t *)cells->buf;
    g->bits = bits && g->grid[0] <= 64;
    if (g->bits) {
        long long g0 = g->grid[0];
        g->lines = g->n / (Py_ssize_t)g0;
        g->mask0 = g0 == 64 ? ~(uint64_t)0 : (((uint64_t)1 << g0) - 1);
        g->wlevel = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(g->d + 1) * (size_t)g->lines);
        g->wtmp = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)g->lines);
        if (!g->wlevel || !g->wtmp) {
            grid_free(g);
            PyErr_NoMemory();
            return -1;
        }
        /* one byte per unit (a loop the compiler vectorises), then eight bytes to eight bits at a time */
        unsigned char *f = (unsigned char *)malloc((size_t)g->n + 8);
        if (!f) {
            grid_free(g);
            PyErr_NoMemory();
            return -1;
        }
        /* compared in the cells' own width (so that the loop vectorises) */
        if (threshold < 0) {
            memset(f, 0, (size_t)g->n);
        } else if (cells->itemsize == 4) {
            uint32_t t4 = threshold >= (long long)UINT32_MAX ? UINT32_MAX : (uint32_t)threshold;
            for (Py_ssize_t u = 0; u < g->n; u++) f[u] = c4[u] <= t4;
        } else {
            unsigned char t1 = threshold >= 255 ? 255 : (unsigned char)threshold;
            for (Py_ssize_t u = 0; u < g->n; u++) f[u] = c1[u] <= t1;
        }
        memset(f + g->n, 0, 8);
        uint64_t any = 0;
        for (Py_ssize_t l = 0; l < g->lines; l++) {
            uint64_t w = 0, x8;
            const unsigned char *fl = f + l * (Py_ssize_t)g0;
            for (long long x = 0; x < g0; x += 8) {
                memcpy(&x8, fl + x, 8); /* (bytes past the line are masked off below) */
                w |= ((x8 * 0x0102040810204080ULL) >> 56) << x;
            }
            w &= g->mask0;
            g->wlevel[l] = w;
            any |= w;
        }
        free(f);
        g->ones[0] = any != 0;
        return 0;
    }
    g->level = (unsigned char *)malloc((size_t)(g->d + 1) * (size_t)g->n);
    g->run = (int32_t *)malloc(sizeof(int32_t) * (size_t)g->n);
    if (!g->level || !g->run) {
        grid_free(g);
        PyErr_NoMemory();
        return -1;
    }
    unsigned char *free0 = g->level;
    long long ones = 0;
    if (threshold < 0) {
        memset(free0, 0, (size_t)g->n);
    } else if (cells->itemsize == 4) {
        uint32_t t4 = threshold >= (long long)UINT32_MAX ? UINT32_MAX : (uint32_t)threshold;
        for (Py_ssize_t u = 0; u < g->n; u++) free0[u] = c4[u] <= t4;
    } else {
        unsigned char t1 = threshold >= 255 ? 255 : (unsigned char)threshold;
        for (Py_ssize_t u = 0; u < g->n; u++) free0[u] = c1[u] <= t1;
    }
    for (Py_ssize_t u = 0; u < g->n; u++) ones += free0[u];
    g->ones[0] = ones;
    return 0;
}

/* number of offsets of side s in dimension i (0: the box does not fit) */
static long long n_offsets(const Grid *g, Py_ssize_t i, long long s) {
    if (s < 1 || s > g->grid[i]) return 0;
    if (s == g->grid[i]) return 1;
    return g->wrap[i] ? g->grid[i] : g->grid[i] - s + 1;
}

/* out[u] = whether the s consecutive entries of `in` from u along dimension i (round the ring where
 * wrap[i]) are all set; returns how many are.  One backward pass per line counts the run of set
 * entries from each one (capped at the ring's length); on a ring the count starts from the run at
 * the line's start, so runs reaching the end continue round.  The lines of a dimension i > 0 are
 * processed side by side (their entries are contiguous), so the inner loop runs over memory. */
static long long along(Grid *g, Py_ssize_t i, long long s, const unsigned char *in, unsigned char *out) {
    long long len = g->grid[i], st = g->stride[i], block = st * len, ones = 0;
    int32_t *c = g->run, cap = (int32_t)len, need = (int32_t)s;
    if (st == 1) { /* dimension 0: each line is contiguous */
        for (long long hi = 0; hi < g->n; hi += len) {
            const unsigned char *a = in + hi;
            unsigned char *b = out + hi;
            int32_t v = 0;
            if (g->wrap[i])
                while (v < cap && a[v]) v++;
            for (long long x = len - 1; x >= 0; x--) {
                v = a[x] ? (v < cap ? v + 1 : cap) : 0;
                b[x] = (unsigned char)(v >= need);
                ones += b[x];
            }
        }
        return ones;
    }
    for (long long hi = 0; hi < g->n; hi += block) {
        const unsigned char *a = in + hi;
        unsigned char *b = out + hi;
        for (long long lo = 0; lo < st; lo++) {
            long long x = 0;
            if (g->wrap[i])
                while (x < len && a[x * st + lo]) x++;
            c[lo] = (int32_t)x;
        }
        for (long long x = len - 1; x >= 0; x--) {
            const unsigned char *ax = a + x * st;
            unsigned char *bx = b + x * st;
            for (long long lo = 0; lo < st; lo++) {
                int32_t v = ax[lo] ? c[lo] + 1 : 0;
                v = v > cap ? cap : v;
                c[lo] = v;
                bx[lo] = (unsigned char)(v >= need);
                ones += bx[lo];
            }
        }
    }
    return ones;
}

/* the bit path: bit x of word l of `out` = the s units from x along dimension 0 are all set in `in`
 * (round the ring where wrap[0]); by doubling, a window of c set bits and one of step <= c shifted by
 * step make one of c + step.  Returns whether any bit is set. */
static int bits_along0(Grid *g, long long s, const uint64_t *in, uint64_t *out) {
    long long g0 = g->grid[0];
    int wrap = (int)g->wrap[0];
    uint64_t any = 0, mask = g->mask0;
    for (Py_ssize_t l = 0; l < g->lines; l++) {
        uint64_t r = in[l];
        for (long long c = 1; c < s && r;) {
            long long step = c < s - c ? c : s - c;
            uint64_t sh = r >> step;
            if (wrap) sh = (sh | (r << (g0 - step))) & mask;
            r &= sh;
            c += step;
        }
        out[l] = r;
        any |= r;
    }
    return any != 0;
}

/* the bit path along dimension i >= 1: word y of each line of dimension i (`ls` words apart) = the
 * AND of words y .. y + s - 1 (round the ring where wrap[i]; none past the end otherwise); the
 * doubling steps go back and forth between `out` and the scratch map (no copy between steps) */
static int bits_along(Grid *g, Py_ssize_t i, long long s, const uint64_t *in, uint64_t *out) {
    long long len = g->grid[i], ls = g->stride[i] / g->grid[0], block = ls * len;
    uint64_t any = 0, *buf[2] = {out, g->wtmp};
    const uint64_t *src = in;
    int to = 0;
    for (long long c = 1; c < s;) {
        long long step = c < s - c ? c : s - c, head = (len - step) * ls, rest = step * ls;
        uint64_t *dst = buf[to];
        /* in each block of `len` lines of lines: words y and y + step, two contiguous runs */
        for (long long hi = 0; hi < g->lines; hi += block) {
            const uint64_t *a = src + hi;
            uint64_t *t = dst + hi;
            for (long long u = 0; u < head; u++) t[u] = a[u] & a[u + rest];
            if (g->wrap[i])
                for (long long u = 0; u < rest; u++) t[head + u] = a[head + u] & a[u];
            else
                memset(t + head, 0, sizeof(uint64_t) * (size_t)rest);
        }
        src = dst;
        to ^= 1;
        c += step;
    }
    if (src != out) memcpy(out, src, sizeof(uint64_t) * (size_t)g->lines);
    for (Py_ssize_t l = 0; l < g->lines; l++) any |= out[l];
    return any != 0;
}

static const uint64_t *bits_boxes_of(Grid *g, const long long *s) {
    Py_ssize_t keep = 0;
    while (keep < g->n_made && g->made[keep] == s[keep]) keep++;
    g->wlev[0] = g->wlevel;
    for (Py_ssize_t i = keep; i < g->d; i++) {
        const uint64_t *in = g->wlev[i];
        uint64_t *out = g->wlevel + (size_t)(i + 1) * (size_t)g->lines;
        g->wlev[i + 1] = out;
        if (g->ones[i] == 0)
            g->ones[i + 1] = 0;
        else if (g->grid[i] == 1) {
            g->wlev[i + 1] = in;
            g->ones[i + 1] = g->ones[i];
        } else if (i == 0)
            g->ones[1] = bits_along0(g, s[0], in, out);
        else
            g->ones[i + 1] = bits_along(g, i, s[i], in, out);
        g->made[i] = s[i];
    }
    g->n_made = g->d;
    return g->ones[g->d] ? g->wlev[g->d] : NULL;
}

/* the map of free boxes of shape s (one byte per offset; offsets out of range are not read), or NULL
 * if there is none */
static const unsigned char *boxes_of(Grid *g, const long long *s) {
    Py_ssize_t keep = 0; /* levels still valid: the dimensions whose sides equal the last shape's */
    while (keep < g->n_made && g->made[keep] == s[keep]) keep++;
    g->lev[0] = g->level;
    for (Py_ssize_t i = keep; i < g->d; i++) {
        const unsigned char *in = g->lev[i];
        unsigned char *out = g->level + (size_t)(i + 1) * (size_t)g->n;
        g->lev[i + 1] = out;
        if (g->ones[i] == 0) { /* nothing free: nothing after */
            g->ones[i + 1] = 0;
        } else if (g->grid[i] == 1) {
            g->lev[i + 1] = in;
            g->ones[i + 1] = g->ones[i];
        } else {
            g->ones[i + 1] = along(g, i, s[i], in, out);
        }
        g->made[i] = s[i];
    }
    g->n_made = g->d;
    return g->ones[g->d] ? g->lev[g->d] : NULL;
}

/* the next of the counters c[1 .. d-1] (c[i] in 0 .. n[i] - 1, c[1] fastest); 0 after the last */
static int next_rest(long long *c, const long long *n, Py_ssize_t d) {
    for (Py_ssize_t i = 1; i < d; i++) {
        if (++c[i] < n[i]) return 1;
        c[i] = 0;
    }
    return 0;
}

/* Visit the free boxes of one shape in order; emit(ctx, o) for each, stop when it returns nonzero.
 * Returns 1 if stopped, 0 if the shape was exhausted. */
typedef int (*emit_fn)(void *ctx, const long long *o);

static int scan_shape(Grid *g, const long long *s, emit_fn emit, void *ctx) {
    Py_ssize_t d = g->d;
    long long cnt[MAXD], o[MAXD];
    for (Py_ssize_t i = 0; i < d; i++) {
        cnt[i] = n_offsets(g, i, s[i]);
        if (!cnt[i]) return 0;
        o[i] = 0;
    }
    if (g->bits) {
        const uint64_t *okw = bits_boxes_of(g, s);
        if (!okw) return 0;
        uint64_t valid = cnt[0] >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << cnt[0]) - 1);
        for (;;) {
            long long line = 0;
            for (Py_ssize_t i = 1; i < d; i++) line += o[i] * (g->stride[i] / g->grid[0]);
            uint64_t w = okw[line] & valid;
            while (w) {
                o[0] = CTZ64(w);
                if (emit(ctx, o)) return 1;
                w &= w - 1;
            }
            if (!next_rest(o, cnt, d)) return 0;
        }
    }
    const unsigned char *ok = boxes_of(g, s);
    if (!ok) return 0;
    for (;;) { /* offsets in order, dimension 0 fastest */
        long long at = 0;
        for (Py_ssize_t i = 1; i < d; i++) at += o[i] * g->stride[i];
        const unsigned char *line = ok + at;
        for (long long x = 0; x < cnt[0]; x++)
            if (line[x]) {
                o[0] = x;
                if (emit(ctx, o)) return 1;
            }
        if (!next_rest(o, cnt, d)) return 0;
    }
}

/* common argument handling: cells, threshold, grid, wrap, shapes */
typedef struct {
    Py_buffer cells, shapes;
    Grid g;
    Py_ssize_t k;
} Search;

static int search_open(Search *S, PyObject *const *args, Py_ssize_t nargs, const char *fname) {
    S->cells.obj = NULL;
    S->shapes.obj = NULL;
    if (nargs != 5 && nargs != 6) {
        PyErr_Format(PyExc_TypeError, "%s: expected 5 or 6 arguments, got %zd", fname, nargs);
        return -1;
    }
    int bits = nargs == 6 ? PyObject_IsTrue(args[5]) : 1;
    if (bits < 0) return -1;
    long long threshold = PyLong_AsLongLong(args[1]);
    if (threshold == -1 && PyErr_Occurred()) return -1;
    if (get(args[0], &S->cells, 0, 1, 0, "cells") < 0) return -1;
    if (get(args[4], &S->shapes, 8, 2, 0, "shapes") < 0) {
        PyBuffer_Release(&S->cells);
        return -1;
    }
    if (grid_init(&S->g, &S->cells, threshold, args[2], args[3], bits) < 0) {
        PyBuffer_Release(&S->cells);
        PyBuffer_Release(&S->shapes);
        return -1;
    }
    if (S->shapes.shape[1] != S->g.d) {
        PyErr_Format(PyExc_ValueError, "shapes: expected %zd columns, got %zd", S->g.d, S->shapes.shape[1]);
        grid_free(&S->g);
        PyBuffer_Release(&S->cells);
        PyBuffer_Release(&S->shapes);
        return -1;
    }
    S->k = S->shapes.shape[0];
    return 0;
}

static void search_close(Search *S) {
    grid_free(&S->g);
    PyBuffer_Release(&S->cells);
    PyBuffer_Release(&S->shapes);
}

typedef struct {
    Py_ssize_t d;
    long long o[MAXD];
} FirstCtx;

static int emit_first(void *ctx, const long long *o) {
    FirstCtx *c = (FirstCtx *)ctx;
    memcpy(c->o, o, sizeof(long long) * (size_t)c->d);
    return 1;
}

PyDoc_STRVAR(first_box_doc,
"first_box(cells, threshold, grid, wrap, shapes, bits=True) -> (k, offsets) | None\n\n"
"The first free box, shape by shape, offsets first dimension fastest (see the module notes).");

static PyObject *py_first_box(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Search S;
    if (search_open(&S, args, nargs, "first_box") < 0) return NULL;
    const long long *shapes = (const long long *)S.shapes.buf;
    FirstCtx c;
    c.d = S.g.d;
    Py_ssize_t found = -1;
    for (Py_ssize_t k = 0; k < S.k && found < 0; k++)
        if (scan_shape(&S.g, shapes + k * S.g.d, emit_first, &c)) found = k;
    Py_ssize_t d = S.g.d;
    search_close(&S);
    if (found < 0) Py_RETURN_NONE;
    PyObject *off = PyTuple_New(d);
    if (!off) return NULL;
    for (Py_ssize_t i = 0; i < d; i++) {
        PyObject *v = PyLong_FromLongLong(c.o[i]);
        if (!v) { Py_DECREF(off); return NULL; }
        PyTuple_SET_ITEM(off, i, v);
    }
    return Py_BuildValue("(nN)", found, off);
}

typedef struct {
    Py_ssize_t d, len, cap;
    long long k;
    long long *out;
    int failed;
} AllCtx;

static int emit_all(void *ctx, const long long *o) {
    AllCtx *c = (AllCtx *)ctx;
    if (c->len + c->d + 1 > c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 1024;
        while (cap < c->len + c->d + 1) cap *= 2;
        long long *p = (long long *)realloc(c->out, sizeof(long long) * (size_t)cap);
        if (!p) { c->failed = 1; return 1; }
        c->out = p;
        c->cap = cap;
    }
    c->out[c->len++] = c->k;
    memcpy(c->out + c->len, o, sizeof(long long) * (size_t)c->d);
    c->len += c->d;
    return 0;
}

PyDoc_STRVAR(all_boxes_doc,
"all_boxes(cells, threshold, grid, wrap, shapes, bits=True) -> bytes\n\n"
"Every free box as int64 records (k, o_0, ..., o_{d-1}), in the order of first_box.");

static PyObject *py_all_boxes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Search S;
    if (search_open(&S, args, nargs, "all_boxes") < 0) return NULL;
    const long long *shapes = (const long long *)S.shapes.buf;
    AllCtx c = {S.g.d, 0, 0, 0, NULL, 0};
    for (Py_ssize_t k = 0; k < S.k && !c.failed; k++) {
        c.k = k;
        scan_shape(&S.g, shapes + k * S.g.d, emit_all, &c);
    }
    search_close(&S);
    if (c.failed) {
        free(c.out);
        return PyErr_NoMemory();
    }
    PyObject *b = PyBytes_FromStringAndSize((const char *)c.out, (Py_ssize_t)(sizeof(long long) * (size_t)c.len));
    free(c.out);
    return b;
}

/* the boxes and one box of the clearance checks */
typedef struct {
    Py_buffer sides, offs;
    Py_ssize_t d, p;
    long long grid[MAXD], bs[MAXD], bo[MAXD];
} Clear;

static int clear_open(Clear *C, PyObject *const *args, const char *fname) {
    (void)fname;
    Py_ssize_t d1, d2;
    C->sides.obj = NULL;
    C->offs.obj = NULL;
    if (ints(args[2], C->grid, &C->d, "grid") < 0 || ints(args[3], C->bs, &d1, "box_sides") < 0 || ints(args[4], C->bo, &d2, "box_off") < 0) return -1;
    if (d1 != C->d || d2 != C->d) {
        PyErr_Format(PyExc_ValueError, "box_sides, box_off: expected %zd values each", C->d);
        return -1;
    }
    for (Py_ssize_t i = 0; i < C->d; i++)
        if (C->grid[i] < 1) {
            PyErr_Format(PyExc_ValueError, "grid: side %lld out of range", C->grid[i]);
            return -1;
        }
    if (get(args[0], &C->sides, 8, 2, 0, "sides") < 0) return -1;
    if (get(args[1], &C->offs, 8, 2, 0, "offs") < 0) {
        PyBuffer_Release(&C->sides);
        return -1;
    }
    if (C->sides.shape[1] != C->d || C->offs.shape[1] != C->d || C->sides.shape[0] != C->offs.shape[0]) {
        PyErr_Format(PyExc_ValueError, "sides, offs: expected two arrays of the same rows and %zd columns", C->d);
        PyBuffer_Release(&C->sides);
        PyBuffer_Release(&C->offs);
        return -1;
    }
    C->p = C->sides.shape[0];
    return 0;
}

static void clear_close(Clear *C) {
    PyBuffer_Release(&C->sides);
    PyBuffer_Release(&C->offs);
}

static inline long long modg(long long a, long long g) {
    long long r = a % g;
    return r < 0 ? r + g : r;
}

static inline int meets(const Clear *C, Py_ssize_t r) {
    const long long *s = (const long long *)C->sides.buf + r * C->d;
    const long long *o = (const long long *)C->offs.buf + r * C->d;
    for (Py_ssize_t i = 0; i < C->d; i++) {
        long long g = C->grid[i];
        if (!(modg(C->bo[i] - o[i], g) < s[i] || modg(o[i] - C->bo[i], g) < C->bs[i])) return 0;
    }
    return 1;
}

PyDoc_STRVAR(first_clear_doc,
"first_clear(sides, offs, grid, box_sides, box_off, lo, hi) -> int\n\n"
"The first row in lo .. hi-1 whose box does not meet the given box, or -1.");

static PyObject *py_first_clear(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 7) return PyErr_Format(PyExc_TypeError, "first_clear: expected 7 arguments, got %zd", nargs);
    Py_ssize_t lo = PyLong_AsSsize_t(args[5]);
    if (lo == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t hi = PyLong_AsSsize_t(args[6]);
    if (hi == -1 && PyErr_Occurred()) return NULL;
    Clear C;
    if (clear_open(&C, args, "first_clear") < 0) return NULL;
    if (lo < 0) lo = 0;
    if (hi > C.p) hi = C.p;
    Py_ssize_t found = -1;
    for (Py_ssize_t r = lo; r < hi; r++)
        if (!meets(&C, r)) { found = r; break; }
    clear_close(&C);
    return PyLong_FromSsize_t(found);
}

PyDoc_STRVAR(clear_mask_doc,
"clear_mask(sides, offs, grid, box_sides, box_off, out) -> int\n\n"
"out[r] = 1 where box r does not meet the given box, else 0; returns how many do not.");

static PyObject *py_clear_mask(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) return PyErr_Format(PyExc_TypeError, "clear_mask: expected 6 arguments, got %zd", nargs);
    Clear C;
    if (clear_open(&C, args, "clear_mask") < 0) return NULL;
    Py_buffer bo;
    if (get(args[5], &bo, 1, 1, 1, "out") < 0) { clear_close(&C); return NULL; }
    if (bo.shape[0] != C.p) {
        PyErr_Format(PyExc_ValueError, "out: expected %zd items, got %zd", C.p, bo.shape[0]);
        PyBuffer_Release(&bo);
        clear_close(&C);
        return NULL;
    }
    unsigned char *out = (unsigned char *)bo.buf;
    Py_ssize_t n = 0;
    for (Py_ssize_t r = 0; r < C.p; r++) {
        out[r] = (unsigned char)!meets(&C, r);
        n += out[r];
    }
    PyBuffer_Release(&bo);
    clear_close(&C);
    return PyLong_FromSsize_t(n);
}

/* ------------------------------------------------------------------ placement maps (bit path) */

PyDoc_STRVAR(placement_map_doc,
"placement_map(cells, threshold, grid, wrap, shapes) -> bytearray\n\n"
"Every free box as bits (grid[0] <= 64): per shape k, one uint64 word per line of dimension 0\n"
"(lines in unit-id order), bit x of line l set iff the box of shape k at offset (x, the line's\n"
"coordinates) is free and a valid offset.  k x lines words, writable (map_clear_of edits it).");

static PyObject *py_placement_map(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Search S;
    if (search_open(&S, args, nargs, "placement_map") < 0) return NULL;
    if (!S.g.bits) {
        search_close(&S);
        PyErr_SetString(PyExc_ValueError, "placement_map: grid[0] must be at most 64");
        return NULL;
    }
    const long long *shapes = (const long long *)S.shapes.buf;
    Py_ssize_t lines = S.g.lines, d = S.g.d;
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(sizeof(uint64_t) * (size_t)(S.k * lines)));
    if (!out) { search_close(&S); return NULL; }
    uint64_t *w = (uint64_t *)PyByteArray_AS_STRING(out);
    memset(w, 0, sizeof(uint64_t) * (size_t)(S.k * lines));
    for (Py_ssize_t k = 0; k < S.k; k++) {
        const long long *s = shapes + k * d;
        long long cnt[MAXD], o[MAXD];
        int fits = 1;
        for (Py_ssize_t i = 0; i < d; i++) {
            cnt[i] = n_offsets(&S.g, i, s[i]);
            fits &= cnt[i] > 0;
            o[i] = 0;
        }
        if (!fits) continue;
        const uint64_t *ok = bits_boxes_of(&S.g, s);
        if (!ok) continue;
        uint64_t valid = cnt[0] >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << cnt[0]) - 1);
        uint64_t *dst = w + k * lines;
        for (;;) {
            long long line = 0;
            for (Py_ssize_t i = 1; i < d; i++) line += o[i] * (S.g.stride[i] / S.g.grid[0]);
            dst[line] = ok[line] & valid;
            if (!next_rest(o, cnt, d)) break;
        }
    }
    search_close(&S);
    return out;
}

static inline int popcount64(uint64_t w) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(w);
#else
    int c = 0;
    while (w) { w &= w - 1; c++; }
    return c;
#endif
}

PyDoc_STRVAR(map_clear_of_doc,
"map_clear_of(map, shapes, grid, box_sides, box_off, remove, counts=None, any=False) -> int\n\n"
"How many placements of `map` (from placement_map) do not meet the box (box_sides, box_off); with\n"
"`remove` true and at least one such, the placements that meet it are cleared from the map.  A\n"
"placement of sides s at o meets the box iff in every dimension (box_off - o) mod g < s or\n"
"(o - box_off) mod g < box_s: o in the cyclic interval box_off - s + 1 .. box_off + box_s - 1.\n"
"`counts` (int64, one per shape): the placements of each shape in the map, kept by the caller\n"
"(-1: not known yet, counted and stored); removals update it.  `any` (without `remove`): 1 as soon\n"
"as one placement is found that does not meet the box, else 0.");

/* the offsets of a shape's placements that meet a box: per dimension the cyclic interval
 * start .. start + len - 1 (all of it when len = grid); dimension 0's as a bit mask, the others as
 * the word offsets of their lines (off[i][j] = ((start + j) mod grid) * words per step of i) */
typedef struct {
    long long len[MAXD];
    long long *off[MAXD];
    uint64_t m0;
} Region;

/* `work` holds sum(grid[1:]) entries */
static void region_of(Region *R, Py_ssize_t d, const long long *grid, const long long *stride, const long long *s, const long long *bs,
                      const long long *bo, long long *work) {
    for (Py_ssize_t i = 0; i < d; i++) {
        long long L = s[i] + bs[i] - 1, st = (bo[i] - s[i] + 1) % grid[i];
        R->len[i] = L > grid[i] ? grid[i] : L;
        if (st < 0) st += grid[i];
        if (i == 0) {
            R->m0 = 0;
            for (long long t = 0; t < R->len[0]; t++) R->m0 |= (uint64_t)1 << ((st + t) % grid[0]);
            continue;
        }
        long long w = stride[i] / grid[0], c = st;
        R->off[i] = work;
        for (long long t = 0; t < R->len[i]; t++) {
            work[t] = c * w;
            if (++c == grid[i]) c = 0;
        }
        work += R->len[i];
    }
}

/* the placements of map m inside the region (counted before clearing them, if clear) */
static long long region_walk(const Region *R, Py_ssize_t d, uint64_t *m, int clear) {
    long long j[MAXD], inside = 0, line = 0;
    for (Py_ssize_t i = 1; i < d; i++) {
        j[i] = 0;
        line += R->off[i][0];
    }
    for (;;) {
        inside += popcount64(m[line] & R->m0);
        if (clear) m[line] &= ~R->m0;
        Py_ssize_t i = 1; /* the next line: an odometer over dimensions 1 .. d-1 */
        for (; i < d; i++) {
            line -= R->off[i][j[i]];
            if (++j[i] < R->len[i]) {
                line += R->off[i][j[i]];
                break;
            }
            j[i] = 0;
            line += R->off[i][0];
        }
        if (i == d) return inside;
    }
}

static PyObject *py_map_clear_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 6 || nargs > 8) return PyErr_Format(PyExc_TypeError, "map_clear_of: expected 6 to 8 arguments, got %zd", nargs);
    long long grid[MAXD], bs[MAXD], bo[MAXD];
    Py_ssize_t d, d1, d2;
    if (ints(args[2], grid, &d, "grid") < 0 || ints(args[3], bs, &d1, "box_sides") < 0 || ints(args[4], bo, &d2, "box_off") < 0) return NULL;
    if (d1 != d || d2 != d) return PyErr_Format(PyExc_ValueError, "box_sides, box_off: expected %zd values each", d);
    int remove = PyObject_IsTrue(args[5]);
    if (remove < 0) return NULL;
    int any_only = nargs == 8 ? PyObject_IsTrue(args[7]) : 0;
    if (any_only < 0) return NULL;
    if (any_only && remove) return PyErr_Format(PyExc_ValueError, "map_clear_of: any and remove exclude each other");
    long long stride[MAXD], n = 1, work[MAXD * 64];
    for (Py_ssize_t i = 0; i < d; i++) {
        if (grid[i] < 1) return PyErr_Format(PyExc_ValueError, "grid: side %lld out of range", grid[i]);
        stride[i] = n;
        n *= grid[i];
    }
    long long *wk = work, side_sum = 0;
    for (Py_ssize_t i = 1; i < d; i++) side_sum += grid[i];
    if (side_sum > MAXD * 64) {
        wk = (long long *)PyMem_Malloc(sizeof(long long) * (size_t)side_sum);
        if (!wk) return PyErr_NoMemory();
    }
    if (grid[0] > 64) {
        if (wk != work) PyMem_Free(wk);
        return PyErr_Format(PyExc_ValueError, "map_clear_of: grid[0] must be at most 64");
    }
    Py_buffer bm, bsh, bc;
    bc.obj = NULL;
    long long *counts = NULL;
    if (get(args[0], &bm, 8, 1, 1, "map") < 0) goto fail0;
    if (get(args[1], &bsh, 8, 2, 0, "shapes") < 0) { PyBuffer_Release(&bm); goto fail0; }
    Py_ssize_t k = bsh.shape[0], lines = (Py_ssize_t)(n / grid[0]);
    if (nargs >= 7 && args[6] != Py_None) {
        if (get(args[6], &bc, 8, 1, 1, "counts") < 0) goto fail1;
        if (bc.shape[0] != k) {
            PyErr_Format(PyExc_ValueError, "counts: expected %zd values (one per shape), got %zd", k, bc.shape[0]);
            goto fail2;
        }
        counts = (long long *)bc.buf;
    }
    if (bsh.shape[1] != d || bm.shape[0] != k * lines) {
        PyErr_Format(PyExc_ValueError, "map_clear_of: expected a map of %zd x %zd words and shapes of %zd columns", k, lines, d);
        goto fail2;
    }
    uint64_t *map = (uint64_t *)bm.buf;
    const long long *shapes = (const long long *)bsh.buf;
    long long outside = 0;
    Region R;
    for (Py_ssize_t r = 0; r < k; r++) {
        uint64_t *m = map + r * lines;
        long long all = counts ? counts[r] : -1;
        if (all < 0) {
            all = 0;
            for (Py_ssize_t l = 0; l < lines; l++) all += popcount64(m[l]);
            if (counts) counts[r] = all;
        }
        if (!all) continue;
        region_of(&R, d, grid, stride, shapes + r * d, bs, bo, wk);
        outside += all - region_walk(&R, d, m, 0);
        if (any_only && outside) break;
    }
    if (remove && outside > 0)
        for (Py_ssize_t r = 0; r < k; r++) {
            if (counts && !counts[r]) continue;
            region_of(&R, d, grid, stride, shapes + r * d, bs, bo, wk);
            long long gone = region_walk(&R, d, map + r * lines, 1);
            if (counts) counts[r] -= gone;
        }
    if (bc.obj) PyBuffer_Release(&bc);
    PyBuffer_Release(&bm);
    PyBuffer_Release(&bsh);
    if (wk != work) PyMem_Free(wk);
    if (any_only) return PyLong_FromLong(outside > 0);
    return PyLong_FromLongLong(outside);
fail2:
    if (bc.obj) PyBuffer_Release(&bc);
fail1:
    PyBuffer_Release(&bm);
    PyBuffer_Release(&bsh);
fail0:
    if (wk != work) PyMem_Free(wk);
    return NULL;
}

PyDoc_STRVAR(ascending_ids_doc,
"ascending_ids(coords, strides, out) -> None\n\n"
"out[...] = every sum(c_i * strides[i]) with c_i from coords[i] (int64 arrays, each ascending), in\n"
"ascending order: the last dimension outermost, given strides growing with i and each\n"
"c_i * strides[i] < strides[i + 1] (slices.py, _ascending_ids).  out: int64, prod(len(c_i)) values.");

static PyObject *py_ascending_ids(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) return PyErr_Format(PyExc_TypeError, "ascending_ids: expected 3 arguments, got %zd", nargs);
    long long st[MAXD];
    Py_ssize_t d, ds;
    if (ints(args[1], st, &ds, "strides") < 0) return NULL;
    PyObject *f = PySequence_Fast(args[0], "coords");
    if (!f) return NULL;
    d = PySequence_Fast_GET_SIZE(f);
    if (d != ds) {
        Py_DECREF(f);
        return PyErr_Format(PyExc_ValueError, "coords: expected %zd arrays (one per stride), got %zd", ds, d);
    }
    Py_buffer b[MAXD], bo;
    Py_ssize_t got = 0, total = 1, len[MAXD];
    const long long *c[MAXD];
    PyObject *res = NULL;
    for (; got < d; got++) {
        if (get(PySequence_Fast_GET_ITEM(f, got), &b[got], 8, 1, 0, "coords") < 0) goto done;
        len[got] = b[got].shape[0];
        c[got] = (const long long *)b[got].buf;
        total *= len[got];
    }
    if (get(args[2], &bo, 8, 1, 1, "out") < 0) goto done;
    if (bo.shape[0] != total) {
        PyErr_Format(PyExc_ValueError, "out: expected %zd values, got %zd", total, bo.shape[0]);
        PyBuffer_Release(&bo);
        goto done;
    }
    if (total > 0) {
        long long *o = (long long *)bo.buf, base[MAXD + 1];
        Py_ssize_t j[MAXD];
        /* odometer over dimensions d-1 .. 1 (dimension 1 fastest of them), dimension 0 innermost */
        base[d] = 0;
        for (Py_ssize_t i = d - 1; i >= 1; i--) {
            j[i] = 0;
            base[i] = base[i + 1] + c[i][0] * st[i];
        }
        for (;;) {
            long long at = d > 1 ? base[1] : 0;
            for (Py_ssize_t x = 0; x < len[0]; x++) *o++ = at + c[0][x] * st[0];
            Py_ssize_t i = 1;
            for (; i < d; i++) {
                if (++j[i] < len[i]) break;
                j[i] = 0;
            }
            if (i >= d) break;
            for (Py_ssize_t k = i; k >= 1; k--) base[k] = base[k + 1] + c[k][j[k]] * st[k];
        }
    }
    PyBuffer_Release(&bo);
    Py_INCREF(Py_None);
    res = Py_None;
done:
    for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    Py_DECREF(f);
    return res;
}

PyDoc_STRVAR(release_map_doc,
"release_map(busy, tokens, out, sizes) -> None\n\n"
"out[u] = 0 where busy[u] is 0, else 2**31 - 1 (never), then k + 1 on the units of tokens[k] (the\n"
"releases in order: int64 arrays of unit ids); sizes[k] = len(tokens[k]).  busy: uint8 (n), out:\n"
"int32 (n), sizes: int64 (len(tokens)).  The release-time map of slices.py (_release_map).");

static PyObject *py_release_map(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) return PyErr_Format(PyExc_TypeError, "release_map: expected 4 arguments, got %zd", nargs);
    Py_buffer bb, bo, bs;
    if (get(args[0], &bb, 1, 1, 0, "busy") < 0) return NULL;
    if (get(args[2], &bo, 4, 1, 1, "out") < 0) { PyBuffer_Release(&bb); return NULL; }
    if (get(args[3], &bs, 8, 1, 1, "sizes") < 0) { PyBuffer_Release(&bb); PyBuffer_Release(&bo); return NULL; }
    PyObject *res = NULL, *f = NULL;
    Py_ssize_t n = bb.shape[0];
    if (bo.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "out: expected %zd values (one per unit), got %zd", n, bo.shape[0]);
        goto done;
    }
    f = PySequence_Fast(args[1], "tokens");
    if (!f) goto done;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(f);
    if (bs.shape[0] != k) {
        PyErr_Format(PyExc_ValueError, "sizes: expected %zd values (one per token), got %zd", k, bs.shape[0]);
        goto done;
    }
    const unsigned char *busy = (const unsigned char *)bb.buf;
    int32_t *out = (int32_t *)bo.buf;
    long long *sizes = (long long *)bs.buf;
    for (Py_ssize_t u = 0; u < n; u++) out[u] = busy[u] ? INT32_MAX : 0;
    for (Py_ssize_t r = 0; r < k; r++) {
        Py_buffer bt;
        if (get(PySequence_Fast_GET_ITEM(f, r), &bt, 8, 1, 0, "tokens") < 0) goto done;
        const long long *t = (const long long *)bt.buf;
        Py_ssize_t m = bt.shape[0];
        for (Py_ssize_t i = 0; i < m; i++) {
            if (t[i] < 0 || t[i] >= n) {
                PyBuffer_Release(&bt);
                PyErr_Format(PyExc_ValueError, "tokens: unit %lld out of range 0 .. %zd", t[i], n - 1);
                goto done;
            }
            out[t[i]] = (int32_t)(r + 1);
        }
        sizes[r] = m;
        PyBuffer_Release(&bt);
    }
    Py_INCREF(Py_None);
    res = Py_None;
done:
    Py_XDECREF(f);
    PyBuffer_Release(&bb);
    PyBuffer_Release(&bo);
    PyBuffer_Release(&bs);
    return res;
}

static PyMethodDef methods[] = {
    {"placement_map", (PyCFunction)(void (*)(void))py_placement_map, METH_FASTCALL, placement_map_doc},
    {"map_clear_of", (PyCFunction)(void (*)(void))py_map_clear_of, METH_FASTCALL, map_clear_of_doc},
    {"first_box", (PyCFunction)(void (*)(void))py_first_box, METH_FASTCALL, first_box_doc},
    {"all_boxes", (PyCFunction)(void (*)(void))py_all_boxes, METH_FASTCALL, all_boxes_doc},
    {"first_clear", (PyCFunction)(void (*)(void))py_first_clear, METH_FASTCALL, first_clear_doc},
    {"clear_mask", (PyCFunction)(void (*)(void))py_clear_mask, METH_FASTCALL, clear_mask_doc},
    {"ascending_ids", (PyCFunction)(void (*)(void))py_ascending_ids, METH_FASTCALL, ascending_ids_doc},
    {"release_map", (PyCFunction)(void (*)(void))py_release_map, METH_FASTCALL, release_map_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cboxes", "The slice allocator's box search, compiled (see slices.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cboxes(void) { return PyModule_Create(&module); }
