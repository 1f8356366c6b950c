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
 * first_box(cells, threshold, grid, wrap, shapes) -> (k, offsets) | None
 *     The first box all of whose units are free.
 * all_boxes(cells, threshold, grid, wrap, shapes) -> bytes
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
} Grid;

static void grid_free(Grid *g) {
    free(g->level);
    free(g->run);
}

/* parse grid and wrap, and mark the free units; -1 with an exception set on error */
static int grid_init(Grid *g, Py_buffer *cells, long long threshold, PyObject *grid, PyObject *wrap) {
    Py_ssize_t dw;
    g->level = NULL;
    g->run = NULL;
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
    g->level = (unsigned char *)malloc((size_t)(g->d + 1) * (size_t)g->n);
    g->run = (int32_t *)malloc(sizeof(int32_t) * (size_t)g->n);
    if (!g->level || !g->run) {
        grid_free(g);
        PyErr_NoMemory();
        return -1;
    }
    const unsigned char *c1 = (const unsigned char *)cells->buf;
    const uint32_t *c4 = (const uint32_t *)cells->buf;
    unsigned char *free0 = g->level;
    long long ones = 0;
    if (cells->itemsize == 4)
        for (Py_ssize_t u = 0; u < g->n; u++) ones += free0[u] = (long long)c4[u] <= threshold;
    else
        for (Py_ssize_t u = 0; u < g->n; u++) ones += free0[u] = (long long)c1[u] <= threshold;
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

/* the map of free boxes of shape s (one byte per offset; offsets out of range are not read), or NULL
 * if there is none */
static const unsigned char *boxes_of(Grid *g, const long long *s) {
    Py_ssize_t keep = 0; /* levels still valid: the dimensions whose sides equal the last shape's */
    while (keep < g->n_made && g->made[keep] == s[keep]) keep++;
    for (Py_ssize_t i = keep; i < g->d; i++) {
        const unsigned char *in = g->level + (size_t)i * (size_t)g->n;
        unsigned char *out = g->level + (size_t)(i + 1) * (size_t)g->n;
        if (g->ones[i] == 0) { /* nothing free: nothing after */
            g->ones[i + 1] = 0;
        } else if (g->grid[i] == 1) {
            memcpy(out, in, (size_t)g->n);
            g->ones[i + 1] = g->ones[i];
        } else {
            g->ones[i + 1] = along(g, i, s[i], in, out);
        }
        g->made[i] = s[i];
    }
    g->n_made = g->d;
    return g->ones[g->d] ? g->level + (size_t)g->d * (size_t)g->n : NULL;
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
        Py_ssize_t i = 1;
        for (; i < d; i++) {
            if (++o[i] < cnt[i]) break;
            o[i] = 0;
        }
        if (i >= d) return 0;
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
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "%s: expected 5 arguments, got %zd", fname, nargs);
        return -1;
    }
    long long threshold = PyLong_AsLongLong(args[1]);
    if (threshold == -1 && PyErr_Occurred()) return -1;
    if (get(args[0], &S->cells, 0, 1, 0, "cells") < 0) return -1;
    if (get(args[4], &S->shapes, 8, 2, 0, "shapes") < 0) {
        PyBuffer_Release(&S->cells);
        return -1;
    }
    if (grid_init(&S->g, &S->cells, threshold, args[2], args[3]) < 0) {
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
"first_box(cells, threshold, grid, wrap, shapes) -> (k, offsets) | None\n\n"
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
"all_boxes(cells, threshold, grid, wrap, shapes) -> bytes\n\n"
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

static PyMethodDef methods[] = {
    {"first_box", (PyCFunction)(void (*)(void))py_first_box, METH_FASTCALL, first_box_doc},
    {"all_boxes", (PyCFunction)(void (*)(void))py_all_boxes, METH_FASTCALL, all_boxes_doc},
    {"first_clear", (PyCFunction)(void (*)(void))py_first_clear, METH_FASTCALL, first_clear_doc},
    {"clear_mask", (PyCFunction)(void (*)(void))py_clear_mask, METH_FASTCALL, clear_mask_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cboxes", "The slice allocator's box search, compiled (see slices.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cboxes(void) { return PyModule_Create(&module); }
