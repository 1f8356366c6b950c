/* Compiled Best Fit search of the 2-D mesh allocators (see core.py, MeshAllocator._best_fit).
 *
 * The free cells are the bit set of geometry.py's layout: bit b = x + S*p, p the padded row
 * (S = X + 1 bits per row: a padding column; LS = Y + 1 padded rows per layer: a padding row),
 * padding bits always 0.  The search is the Python one word by word:
 *
 *   candidates  V = bases of a free w x l rectangle (runs of w set bits along rows, then runs of
 *               l along columns: a run cannot cross padding, which is never free);
 *   touching    the candidates with a cell just outside that is not free (busy, padding, or below
 *               the first row) -- only they can score above 0;
 *   score       the cells just outside the rectangle (corners excluded) that count: busy cells, and
 *               under the "perimeter" criterion padding and the outside of the mesh as well;
 *   answer      the highest score, ties to the lowest bit (row-major first); if no candidate scores
 *               above 0, the lowest candidate.
 *
 * Returns the base bit, or -1 when no w x l rectangle is free.  The Python search is the reference;
 * tests compare the two on random states.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t u64;

/* words of a bit set of nbits bits, with 2 spare words at the top so shifts read zeros there */
typedef struct {
    Py_ssize_t nw;  /* words holding bits */
    u64 *w;         /* nw + 2 words */
} Bits;

static int bits_new(Bits *b, Py_ssize_t nw) {
    b->nw = nw;
    b->w = (u64 *)calloc((size_t)nw + 2, sizeof(u64));
    return b->w ? 0 : -1;
}

/* out[i] = (src >> k)[i] (k >= 0): bits move to lower indices */
static void shr(const Bits *src, Py_ssize_t k, u64 *out) {
    Py_ssize_t q = k >> 6, nw = src->nw;
    int r = (int)(k & 63);
    for (Py_ssize_t i = 0; i < nw; i++) {
        Py_ssize_t j = i + q;
        u64 lo = j < nw ? src->w[j] : 0, hi = j + 1 < nw ? src->w[j + 1] : 0;
        out[i] = r ? (lo >> r) | (hi << (64 - r)) : lo;
    }
}

/* out[i] = (src << k)[i] (k >= 0), truncated to nw words: bits move to higher indices */
static void shl(const Bits *src, Py_ssize_t k, u64 *out) {
    Py_ssize_t q = k >> 6, nw = src->nw;
    int r = (int)(k & 63);
    for (Py_ssize_t i = 0; i < nw; i++) {
        Py_ssize_t j = i - q;
        u64 lo = j >= 0 ? src->w[j] : 0, lo2 = j - 1 >= 0 ? src->w[j - 1] : 0;
        out[i] = r ? (lo << r) | (lo2 >> (64 - r)) : lo;
    }
}

/* out = bits b of v such that b, b + step, ..., b + (k-1) step are all set (geometry._runs) */
static int runs(const Bits *v, Py_ssize_t k, Py_ssize_t step, Bits *out) {
    Py_ssize_t nw = v->nw;
    Bits cur;
    u64 *tmp = (u64 *)malloc((size_t)(nw + 2) * sizeof(u64));
    if (!tmp || bits_new(&cur, nw) < 0) { free(tmp); return -1; }
    memcpy(cur.w, v->w, (size_t)nw * sizeof(u64));
    int have = 0;
    Py_ssize_t curlen = 1, pos = 0;
    while (k) {
        if (k & 1) {
            if (!have) {
                memcpy(out->w, cur.w, (size_t)nw * sizeof(u64));
                have = 1;
            } else {
                shr(&cur, pos * step, tmp);
                for (Py_ssize_t i = 0; i < nw; i++) out->w[i] &= tmp[i];
            }
            pos += curlen;
        }
        k >>= 1;
        if (k) {
            shr(&cur, curlen * step, tmp);
            for (Py_ssize_t i = 0; i < nw; i++) cur.w[i] &= tmp[i];
            curlen *= 2;
        }
    }
    free(tmp);
    free(cur.w);
    return 0;
}

static inline int bit(const Bits *v, Py_ssize_t b) { return (int)((v->w[b >> 6] >> (b & 63)) & 1); }

typedef struct {
    const Bits *free;
    Py_ssize_t S, LS, X, Y, nbits;
    int perimeter;
} Geo;

/* whether cell c (any integer) counts toward a candidate's score */
static inline int counts(const Geo *g, Py_ssize_t c) {
    if (c < 0) return g->perimeter;  /* below the first row, left of the first cell */
    if (c >= g->nbits) return 0;     /* never a neighbour of a candidate (the top padding row is inside) */
    if (bit(g->free, c)) return 0;
    if (g->perimeter) return 1;      /* busy or padding */
    Py_ssize_t p = c / g->S;
    return (c - p * g->S) < g->X && (p % g->LS) < g->Y;  /* busy real cells only */
}

/* set bits of v among [lo, lo + len) (lo >= 0, lo + len <= nbits) */
static Py_ssize_t count_free_run(const Bits *v, Py_ssize_t lo, Py_ssize_t len) {
    Py_ssize_t n = 0;
    while (len > 0) {
        Py_ssize_t i = lo >> 6;
        int r = (int)(lo & 63);
        int take = 64 - r < len ? 64 - r : (int)len;
        u64 m = take == 64 ? ~(u64)0 : (((u64)1 << take) - 1);
        n += __builtin_popcountll((v->w[i] >> r) & m);
        lo += take;
        len -= take;
    }
    return n;
}

/* the score of the w x l candidate based at bit c */
static Py_ssize_t score(const Geo *g, Py_ssize_t c, Py_ssize_t w, Py_ssize_t l) {
    Py_ssize_t S = g->S, s = 0;
    /* bottom and top rows: w cells each, inside one padded row (x .. x+w-1 < X) */
    Py_ssize_t rows[2] = {c - S, c + l * S};
    for (int k = 0; k < 2; k++) {
        Py_ssize_t lo = rows[k];
        if (lo < 0) {
            s += g->perimeter ? w : 0;
        } else if (g->perimeter || ((lo / S) % g->LS) < g->Y) {
            s += w - count_free_run(g->free, lo, w);  /* a padding row is never free: all w count under perimeter */
        }
    }
    for (Py_ssize_t j = 0; j < l; j++) {
        Py_ssize_t base = c + j * S;
        s += counts(g, base - 1) + counts(g, base + w);
    }
    return s;
}

static int load(PyObject *obj, Py_ssize_t nbits, Bits *out) {
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) < 0) return -1;
    Py_ssize_t nw = (nbits + 63) / 64;
    if (v.len * 8 < nbits || v.len > nw * 8) {
        PyErr_Format(PyExc_ValueError, "free: expected %zd bytes for %zd bits, got %zd", (nbits + 7) / 8, nbits, v.len);
        PyBuffer_Release(&v);
        return -1;
    }
    if (bits_new(out, nw) < 0) { PyBuffer_Release(&v); PyErr_NoMemory(); return -1; }
    const unsigned char *p = (const unsigned char *)v.buf;
    for (Py_ssize_t i = 0; i < v.len; i++) out->w[i >> 3] |= (u64)p[i] << (8 * (i & 7));
    PyBuffer_Release(&v);
    return 0;
}

PyDoc_STRVAR(best_fit_doc,
"best_fit(free, S, LS, X, Y, nbits, w, l, perimeter) -> int\n\n"
"The base bit of Best Fit's w x l rectangle in the free bit set `free` (little-endian\n"
"bytes of geometry.Layers' layout), or -1 if none is free.  `perimeter`: 1 for the\n"
"\"perimeter\" criterion (padding and the mesh's outside count), 0 for \"busy\".");

static PyObject *py_best_fit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) return PyErr_Format(PyExc_TypeError, "best_fit: expected 9 arguments, got %zd", nargs);
    Py_ssize_t a[8];
    for (int i = 0; i < 8; i++) {
        a[i] = PyLong_AsSsize_t(args[i + 1]);
        if (a[i] == -1 && PyErr_Occurred()) return NULL;
    }
    Py_ssize_t S = a[0], LS = a[1], X = a[2], Y = a[3], nbits = a[4], w = a[5], l = a[6];
    int perimeter = a[7] != 0;
    if (S != X + 1 || LS != Y + 1 || X < 1 || Y < 1 || nbits <= 0 || nbits % (S * LS))
        return PyErr_Format(PyExc_ValueError, "best_fit: inconsistent geometry S=%zd LS=%zd X=%zd Y=%zd nbits=%zd", S, LS, X, Y, nbits);
    if (w < 1 || l < 1 || w > X || l > Y) return PyLong_FromLong(-1);
    Bits F = {0, NULL}, H = {0, NULL}, V = {0, NULL}, R = {0, NULL};
    u64 *t1 = NULL, *t2 = NULL;
    Py_ssize_t best_bit = -1;
    if (load(args[0], nbits, &F) < 0) return NULL;
    Py_ssize_t nw = F.nw;
    if (bits_new(&H, nw) < 0 || bits_new(&V, nw) < 0 || bits_new(&R, nw) < 0) goto nomem;
    if (runs(&F, w, 1, &H) < 0 || runs(&H, l, S, &V) < 0) goto nomem;
    Py_ssize_t first = -1, ncand = 0;
    for (Py_ssize_t i = 0; i < nw; i++) {
        if (V.w[i]) {
            if (first < 0) first = (i << 6) + __builtin_ctzll(V.w[i]);
            ncand += __builtin_popcountll(V.w[i]);
            if (ncand > 1) break;
        }
    }
    if (first < 0) goto done;  /* nothing free */
    best_bit = first;
    if (ncand == 1) goto done;
    /* touching candidates: V & ~(free left & free right & free below & free above) */
    if (runs(&F, l, S, &R) < 0) goto nomem;
    t1 = (u64 *)malloc((size_t)(nw + 2) * sizeof(u64));
    t2 = (u64 *)malloc((size_t)(nw + 2) * sizeof(u64));
    if (!t1 || !t2) goto nomem;
    shl(&R, 1, t1);                                 /* the column left of the base is free */
    shr(&R, w, t2);                                 /* the column right of it */
    for (Py_ssize_t i = 0; i < nw; i++) t1[i] &= t2[i];
    shl(&H, S, t2);                                 /* the row below */
    for (Py_ssize_t i = 0; i < nw; i++) t1[i] &= t2[i];
    shr(&H, l * S, t2);                             /* the row above */
    for (Py_ssize_t i = 0; i < nw; i++) t1[i] = V.w[i] & ~(t1[i] & t2[i]);
    {
        Geo g = {&F, S, LS, X, Y, nbits, perimeter};
        Py_ssize_t best = 0;
        for (Py_ssize_t i = 0; i < nw; i++) {
            u64 m = t1[i];
            while (m) {
                Py_ssize_t c = (i << 6) + __builtin_ctzll(m);
                m &= m - 1;
                Py_ssize_t sc = score(&g, c, w, l);
                if (sc > best) { best = sc; best_bit = c; }
            }
        }
    }
    goto done;
nomem:
    PyErr_NoMemory();
    free(F.w); free(H.w); free(V.w); free(R.w); free(t1); free(t2);
    return NULL;
done:
    free(F.w); free(H.w); free(V.w); free(R.w); free(t1); free(t2);
    return PyLong_FromSsize_t(best_bit);
}

static PyMethodDef methods[] = {
    {"best_fit", (PyCFunction)(void (*)(void))py_best_fit, METH_FASTCALL, best_fit_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cmesh", "Compiled Best Fit search of the 2-D mesh allocators (see core.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cmesh(void) { return PyModule_Create(&module); }
