/* Complete subcube recognition on Q_n, compiled (see allocators.py, _first_free_safe).
 *
 * first_free(nodes, n, k, rows, r) answers what the numpy reference computes over the node table of
 * _all_subcubes(n, k) (one row per k-subcube: free masks in the order of combinations(range(n), k),
 * then values ascending): the index of the first row whose every node is free and which is not
 * excluded by `rows`, or -1.
 *
 *   nodes  2**n items: one byte each (a busy mask: a node is free iff its byte is 0) or int64 each
 *          (a release number: free iff it is <= r);
 *   rows   None, or one item per row: one byte (an unsafe mark: the row is excluded iff it is not 0)
 *          or int64 (the release after which the row is safe: excluded iff it is > r).
 *
 * The search is depth first over the free masks F, each new bit above the last (so in the order of
 * combinations), on the free nodes as bits: level d holds the base values v of F's free subcubes
 * (bit v set iff the cube (F, v) is free; v has F's bits clear); adding bit p keeps v iff v and
 * v | 2**p both were bases.  A branch with no base ends, since no F' containing F has one.  At depth
 * k the bases are tried in ascending order, each row's index being F's rank among the combinations
 * times 2**(n - k) plus v's fixed bits packed (the rank of v among F's values).  n <= 15 (as the free list's
 * int32 cube keys elsewhere): the levels are at most 16 x 512 words, in a static buffer (the GIL is held).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef uint64_t u64;
typedef int64_t i64;

#define MAX_N 15
#define MAX_W (((i64)1 << MAX_N) / 64)

/* bit i (0 <= i < 64) set iff bit p of i is 0 (p < 6) */
static const u64 BIT0[6] = {0x5555555555555555ULL, 0x3333333333333333ULL, 0x0F0F0F0F0F0F0F0FULL,
                            0x00FF00FF00FF00FFULL, 0x0000FFFF0000FFFFULL, 0x00000000FFFFFFFFULL};

/* binomial coefficients C(a, b) for a, b <= MAX_N (filled when the module loads) */
static i64 binom[MAX_N + 1][MAX_N + 1];

typedef struct {
    int n, k;
    i64 W;                      /* words of a level */
    u64 g[MAX_N + 1][MAX_W];    /* the levels: 0 but at the words each lists */
    int32_t gw[MAX_N + 1][MAX_W];
    i64 gn[MAX_N + 1];
    const unsigned char *rows1; /* the rows as bytes, or */
    const i64 *rows8;           /* as int64 (neither: no rows) */
    i64 r;
} Search;

/* v's bits at the positions set in `mask`, packed from bit 0 up */
static inline i64 pack_bits(u64 v, u64 mask) {
    i64 out = 0;
    int j = 0;
    while (mask) {
        u64 b = mask & -mask;
        if (v & b) out |= (i64)1 << j;
        mask ^= b;
        j++;
    }
    return out;
}

static inline int excluded(const Search *s, i64 row) {
    if (s->rows1) return s->rows1[row] != 0;
    if (s->rows8) return s->rows8[row] > s->r;
    return 0;
}

/* the first row at or under F (a depth-bit free mask, `rank` the rank of its first combination).
 * A branch ends when F | p keeps fewer than the 2**(k - depth - 1) bases a free k-cube over it would
 * leave (none at all: no free cube for any F' containing it).  Bases thin out fast as F grows, so a
 * level is built, read and cleared through the list of its words that are not 0 (as the kernel's
 * subcube_search); every level above 0 is 0 outside its list, between searches too. */
static i64 search(Search *s, int depth, int from, u64 F, i64 rank) {
    const u64 *G = s->g[depth];
    const int32_t *GW = s->gw[depth];
    i64 GN = s->gn[depth];
    if (depth == s->k) {
        u64 fixed = (((u64)1 << s->n) - 1) & ~F;
        i64 base = rank << (s->n - s->k);
        for (i64 j = 0; j < GN; j++) { /* the list ascends */
            int32_t w = GW[j];
            for (u64 x = G[w]; x; x &= x - 1) {
                u64 v = (u64)(w * 64 + __builtin_ctzll(x));
                i64 row = base + pack_bits(v, fixed);
                if (!excluded(s, row)) return row;
            }
        }
        return -1;
    }
    u64 *H = s->g[depth + 1];
    int32_t *HW = s->gw[depth + 1];
    i64 need = (i64)1 << (s->k - depth - 1);
    i64 c = -1;
    for (int p = from; p <= s->n - (s->k - depth) && c < 0; p++) {
        i64 hn = 0, have = 0;
        if (p < 6) {
            int sh = 1 << p;
            for (i64 j = 0; j < GN; j++) {
                int32_t w = GW[j];
                u64 x = G[w] & (G[w] >> sh) & BIT0[p];
                if (x) { H[w] = x; HW[hn++] = w; have += __builtin_popcountll(x); }
            }
        } else {
            int32_t st = (int32_t)1 << (p - 6);
            for (i64 j = 0; j < GN; j++) {
                int32_t w = GW[j];
                if (w & st) continue;
                u64 x = G[w] & G[w + st];
                if (x) { H[w] = x; HW[hn++] = w; have += __builtin_popcountll(x); }
            }
        }
        s->gn[depth + 1] = hn;
        if (have >= need) c = search(s, depth + 1, p + 1, F | ((u64)1 << p), rank);
        for (i64 j = 0; j < hn; j++) H[HW[j]] = 0;
        rank += binom[s->n - 1 - p][s->k - depth - 1]; /* the combinations whose next element is p */
    }
    return c;
}

static int get(PyObject *o, Py_buffer *b, const char *name) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (b->ndim != 1 || (b->itemsize != 1 && b->itemsize != 8)) {
        PyErr_Format(PyExc_ValueError, "%s: expected a one-dimensional array of 1- or 8-byte items", name);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(first_free_doc,
"first_free(nodes, n, k, rows, r) -> int\n\n"
"The index of the first k-subcube of Q_n (in _all_subcubes' order) whose nodes are all free and which\n"
"`rows` does not exclude, or -1.  nodes: 2**n bytes (busy mask) or int64 (free iff <= r); rows: None,\n"
"or a byte per subcube (excluded iff not 0) or an int64 (excluded iff > r).  n <= 15.");

static PyObject *py_first_free(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "first_free(nodes, n, k, rows, r) takes 5 arguments");
        return NULL;
    }
    long n = PyLong_AsLong(args[1]), k = PyLong_AsLong(args[2]);
    long long r = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (n < 0 || n > MAX_N) return PyErr_Format(PyExc_ValueError, "n = %ld: expected 0 <= n <= %d", n, MAX_N);
    if (k < 0) return PyErr_Format(PyExc_ValueError, "k = %ld: expected k >= 0", k);
    if (k > n) return PyLong_FromLong(-1);
    static Search s; /* (the GIL is held throughout: one search at a time) */
    s.n = (int)n;
    s.k = (int)k;
    s.W = n >= 6 ? ((i64)1 << n) / 64 : 1;
    s.r = r;
    Py_buffer nb, rb;
    if (get(args[0], &nb, "nodes") < 0) return NULL;
    i64 N = (i64)1 << n;
    if (nb.len / nb.itemsize != N) {
        PyBuffer_Release(&nb);
        return PyErr_Format(PyExc_ValueError, "nodes: expected %lld items, got %lld", (long long)N, (long long)(nb.len / nb.itemsize));
    }
    i64 nrows = binom[n][k] << (n - k);
    s.rows1 = NULL;
    s.rows8 = NULL;
    int has_rows = args[3] != Py_None;
    if (has_rows) {
        if (get(args[3], &rb, "rows") < 0) {
            PyBuffer_Release(&nb);
            return NULL;
        }
        if (rb.len / rb.itemsize != nrows) {
            PyBuffer_Release(&nb);
            PyBuffer_Release(&rb);
            return PyErr_Format(PyExc_ValueError, "rows: expected %lld items, got %lld", (long long)nrows, (long long)(rb.len / rb.itemsize));
        }
        if (rb.itemsize == 1) s.rows1 = rb.buf; else s.rows8 = rb.buf;
    }
    i64 have = 0, nw = 0;
    for (i64 w = 0; w < s.W; w++) s.g[0][w] = 0; /* (levels above 0 are 0 already: static, and each search clears them) */
    if (nb.itemsize == 1) {
        const unsigned char *m = nb.buf;
        for (i64 i = 0; i < N; i++)
            if (!m[i]) s.g[0][i >> 6] |= (u64)1 << (i & 63);
    } else {
        const i64 *m = nb.buf;
        for (i64 i = 0; i < N; i++)
            if (m[i] <= r) s.g[0][i >> 6] |= (u64)1 << (i & 63);
    }
    for (i64 w = 0; w < s.W; w++)
        if (s.g[0][w]) {
            s.gw[0][nw++] = (int32_t)w;
            have += __builtin_popcountll(s.g[0][w]);
        }
    s.gn[0] = nw;
    i64 got = have < ((i64)1 << k) ? -1 : search(&s, 0, 0, 0, 0);
    PyBuffer_Release(&nb);
    if (has_rows) PyBuffer_Release(&rb);
    return PyLong_FromLongLong(got);
}

static PyMethodDef methods[] = {
    {"first_free", (PyCFunction)(void (*)(void))py_first_free, METH_FASTCALL, first_free_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_csubcube", "Complete subcube recognition on Q_n, compiled (see allocators.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__csubcube(void) {
    for (int a = 0; a <= MAX_N; a++)
        for (int b = 0; b <= MAX_N; b++) binom[a][b] = b == 0 ? 1 : a == 0 ? 0 : binom[a - 1][b - 1] + binom[a - 1][b];
    return PyModule_Create(&module);
}
