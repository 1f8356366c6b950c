/* The linear allocators' grants, replayed in C (see allocator.py, LinearAllocator; sched/fastpath.py).
 *
 * When the compiled kernel has fixed a run's schedule, the placements are the allocator's answers to the
 * kernel's log of starts and ends.  State(n, strategy, ring, node_at_rank, jobs) keeps what a
 * LinearAllocator keeps -- the free mask over ranks and the free intervals (maximal runs of free ranks,
 * the whole free ring as the interval (0, n)) with their count per length -- and answers allocate and
 * release by the same rules, line for line:
 *
 *   sorted_free_list  the first p free ranks;
 *   first_fit         the interval with the smallest start that holds p;
 *   best_fit          the shortest interval that holds p (ties: smallest start);
 *   sum_of_squares    the interval minimising sum_i N(i)^2 afterwards (ties: smallest start);
 *   otherwise         the window of p free ranks of least span (linear or ring), ties at the smallest start,
 *                     carved run by run.
 *
 * A grant's nodes are node_at_rank of its ranks, sorted ascending (the base allocator's Allocation.nodes);
 * a release gives its maximal runs of ranks back in ascending order, merging with free neighbours.
 *
 * replay(log, pos, sizes, out_nodes, out_jobs, out_ids, node_limit, job_limit) applies log[pos:] (e >= 0:
 * job e starts; e < 0: job -1-e ends) and writes each ended job's position to out_jobs and its nodes to
 * out_nodes, stopping right after the end that brings the ended jobs' sizes to node_limit or their count
 * to job_limit (the locality stream's batch), or at the log's end.  With a memo (State(..., memo=k)), a
 * job on one run of ranks a .. a+p-1 gets a number for (a, p); a placement numbered before is not written
 * again (out_ids says which): its metrics are those measured the first time, a function of the node set.
 * Nothing is checked by the base allocator here; instead every granted rank must be free and every
 * release must be of a job that holds ranks, else a RuntimeError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { SORTED_FREE_LIST = 0, FIRST_FIT = 1, BEST_FIT = 2, SUM_OF_SQUARES = 3 };

typedef struct {
    PyObject_HEAD
    int64_t n;
    int strategy, ring;
    int64_t *node_at_rank; /* NULL: ranks are node ids */
    uint64_t *free_w;      /* a bit per rank, 1 free (bits past n stay 0) */
    int64_t free_count;
    int64_t *len_at;       /* n: length of the interval starting at the rank, 0 none */
    int64_t *start_at_end; /* n + 1: start of the interval ending (exclusive, mod n on a ring) there, -1 none */
    int64_t *starts;       /* the intervals' starts, ascending */
    int64_t m;             /* how many intervals */
    int64_t *cnt_len;      /* n + 1: intervals per length */
    int64_t *run_len;      /* n: a held run starting at the rank: its length */
    int64_t *run_next;     /* n: the next run (ascending) of the same job, -1 none */
    int64_t jobs;
    int64_t *job_head;     /* jobs: first run of a held job, -1 not held */
    int64_t *job_size;     /* jobs: ranks held */
    int64_t *scratch;      /* n: free ranks (the min-span fallback) */
    int64_t *win;          /* n: the granted ranks */
    int64_t *tmp;          /* n: radix sort buffer */
    uint64_t *bits;        /* n bits, all clear between sorts */
    int64_t memo_cap, memo_used, memo_slots; /* the placement memo: at most memo_cap numbers */
    int64_t *memo_key, *memo_val;            /* open addressing: key a * (n + 1) + p (-1 empty), its number */
} State;

#define IS_FREE(S, r) (((S)->free_w[(r) >> 6] >> ((r) & 63)) & 1)

/* The first (at most k) free ranks, ascending, into out; returns how many. */
static int64_t free_ranks(State *S, int64_t *out, int64_t k) {
    int64_t c = 0, words = (S->n + 63) >> 6;
    for (int64_t wi = 0; wi < words && c < k; wi++) {
        uint64_t x = S->free_w[wi];
        while (x && c < k) {
            out[c++] = (wi << 6) + __builtin_ctzll(x);
            x &= x - 1;
        }
    }
    return c;
}

static int64_t iv_end(State *S, int64_t s, int64_t len) {
    int64_t e = s + len;
    return S->ring ? e % S->n : e;
}

static int64_t lower(const int64_t *a, int64_t m, int64_t x) {
    int64_t lo = 0, hi = m;
    while (lo < hi) {
        int64_t mid = (lo + hi) >> 1;
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static void iv_add(State *S, int64_t s, int64_t len) {
    S->len_at[s] = len;
    S->start_at_end[iv_end(S, s, len)] = s;
    int64_t i = lower(S->starts, S->m, s);
    memmove(S->starts + i + 1, S->starts + i, (size_t)(S->m - i) * sizeof(int64_t));
    S->starts[i] = s;
    S->m++;
    S->cnt_len[len]++;
}

static int64_t iv_remove(State *S, int64_t s) {
    int64_t len = S->len_at[s];
    S->len_at[s] = 0;
    S->start_at_end[iv_end(S, s, len)] = -1;
    int64_t i = lower(S->starts, S->m, s);
    memmove(S->starts + i, S->starts + i + 1, (size_t)(S->m - i - 1) * sizeof(int64_t));
    S->m--;
    S->cnt_len[len]--;
    return len;
}

/* The start of the interval holding free rank a (allocator.py, _containing_start). */
static int64_t containing_start(State *S, int64_t a) {
    if (S->len_at[a] > 0) return a;
    for (int64_t r = S->n - 1; r >= 0; r--)
        if (!IS_FREE(S, r)) return r + 1;
    return -1;
}

/* Remove free ranks a .. a+k-1 (mod n on a ring), which lie inside one interval (_carve). */
static int carve(State *S, int64_t a, int64_t k) {
    int64_t n = S->n;
    int64_t s = containing_start(S, a);
    if (s < 0 || s >= n || S->len_at[s] <= 0) return -1;
    int64_t length = iv_remove(S, s);
    int64_t off = S->ring ? ((a - s) % n + n) % n : a - s;
    int64_t rest = length - off - k;
    if (S->ring && length == n) {
        if (n - k > 0) iv_add(S, (a + k) % n, n - k);
        return 0;
    }
    if (off < 0 || rest < 0) return -1;
    if (off > 0) iv_add(S, s, off);
    if (rest > 0) iv_add(S, S->ring ? (a + k) % n : a + k, rest);
    return 0;
}

/* Free ranks a .. a+k-1, merging with the free neighbours (_give_back). */
static void give_back(State *S, int64_t a, int64_t k) {
    int64_t n = S->n;
    int64_t end = a + k;
    if (S->ring) end %= n;
    int64_t left = S->start_at_end[a];
    int64_t right = (end < n && S->len_at[end] > 0) ? end : -1;
    if (left >= 0 && right >= 0 && left == right) {
        iv_remove(S, left);
        iv_add(S, 0, n);
        return;
    }
    int64_t s = a, length = k;
    if (left >= 0) { length += iv_remove(S, left); s = left; }
    if (right >= 0) length += iv_remove(S, right);
    iv_add(S, s, length);
}

/* The start of the interval the strategy picks for p, or -1 (_choose_interval). */
static int64_t choose(State *S, int64_t p) {
    int64_t best = -1, best_len = 0, best_delta = 0;
    for (int64_t i = 0; i < S->m; i++) {
        int64_t s = S->starts[i], L = S->len_at[s];
        if (L < p) continue;
        switch (S->strategy) {
        case FIRST_FIT:
            return s;
        case BEST_FIT:
            if (best < 0 || L < best_len) { best = s; best_len = L; }
            break;
        default: { /* sum of squares: the change of sum N(i)^2 when p is taken from an interval of length L */
            int64_t delta = 1 - 2 * S->cnt_len[L];
            if (L > p) delta += 2 * S->cnt_len[L - p] + 1;
            if (best < 0 || delta < best_delta) { best = s; best_delta = delta; }
        }
        }
    }
    return best;
}

/* Sort v[0..k) (distinct nodes) ascending: a bit per node walked in order when the machine is small beside
 * the grant, else insertion sort when short, else LSD radix sort on 11-bit digits (values < 2^33). */
static void sort_nodes(State *S, int64_t *v, int64_t k) {
    int64_t words = (S->n + 63) >> 6;
    if (k > 8 && words <= 8 * k) {
        uint64_t *bits = S->bits;
        for (int64_t i = 0; i < k; i++) bits[v[i] >> 6] |= 1ULL << (v[i] & 63);
        int64_t c = 0;
        for (int64_t wi = 0; wi < words; wi++) {
            uint64_t x = bits[wi];
            bits[wi] = 0;
            while (x) {
                v[c++] = (wi << 6) + __builtin_ctzll(x);
                x &= x - 1;
            }
        }
        return;
    }
    if (k <= 64) {
        for (int64_t i = 1; i < k; i++) {
            int64_t t = v[i], j = i;
            while (j > 0 && v[j - 1] > t) { v[j] = v[j - 1]; j--; }
            v[j] = t;
        }
        return;
    }
    int64_t maxv = 0;
    for (int64_t i = 0; i < k; i++) if (v[i] > maxv) maxv = v[i];
    int64_t *src = v, *dst = S->tmp;
    int passes = 0;
    for (int shift = 0; (maxv >> shift) > 0; shift += 11) {
        int64_t count[2049];
        memset(count, 0, sizeof count);
        for (int64_t i = 0; i < k; i++) count[((src[i] >> shift) & 2047) + 1]++;
        for (int d = 0; d < 2048; d++) count[d + 1] += count[d];
        for (int64_t i = 0; i < k; i++) dst[count[(src[i] >> shift) & 2047]++] = src[i];
        int64_t *t = src; src = dst; dst = t;
        passes++;
    }
    if (passes & 1) memcpy(v, src, (size_t)k * sizeof(int64_t));
}

/* Bits lo .. hi-1 of a word (0 <= lo < hi <= 64). */
static uint64_t word_mask(int64_t lo, int64_t hi) {
    return (hi == 64 ? ~0ULL : ((1ULL << hi) - 1)) & ~((1ULL << lo) - 1);
}

/* Whether ranks a .. a+len-1 (no wrap) are all free. */
static int range_free(State *S, int64_t a, int64_t len) {
    for (int64_t e = a + len; a < e;) {
        int64_t lo = a & 63, hi = lo + (e - a) < 64 ? lo + (e - a) : 64;
        uint64_t m = word_mask(lo, hi);
        if ((S->free_w[a >> 6] & m) != m) return 0;
        a += hi - lo;
    }
    return 1;
}

/* Mark ranks a .. a+len-1 (no wrap) free (value 1) or busy (0), a word at a time. */
static void range_mark(State *S, int64_t a, int64_t len, int value) {
    for (int64_t e = a + len; a < e;) {
        int64_t lo = a & 63, hi = lo + (e - a) < 64 ? lo + (e - a) : 64;
        uint64_t m = word_mask(lo, hi);
        if (value) S->free_w[a >> 6] |= m; else S->free_w[a >> 6] &= ~m;
        a += hi - lo;
    }
}

/* Record job j's runs (ascending, none adjacent): heads[i], lens[i]. */
static void set_runs(State *S, int64_t j, const int64_t *heads, const int64_t *lens, int64_t k, int64_t p) {
    for (int64_t i = 0; i < k; i++) {
        S->run_len[heads[i]] = lens[i];
        S->run_next[heads[i]] = i + 1 < k ? heads[i + 1] : -1;
    }
    S->job_head[j] = heads[0];
    S->job_size[j] = p;
}

/* Grant p ranks to job j (_allocate): 0 ok, -1 an inconsistency. */
static int allocate(State *S, int64_t j, int64_t p) {
    int64_t n = S->n;
    int64_t *win = S->win;
    if (p < 1 || p > S->free_count || S->job_head[j] >= 0) return -1;
    if (S->strategy != SORTED_FREE_LIST) {
        int64_t s = choose(S, p);
        if (s >= 0) { /* an interval that fits: one run, or two where it wraps past rank n - 1 */
            if (carve(S, s, p) < 0) return -1;
            int64_t heads[2], lens[2], k = 0;
            if (s + p <= n) { heads[0] = s; lens[0] = p; k = 1; }
            else { heads[0] = 0; lens[0] = s + p - n; heads[1] = s; lens[1] = n - s; k = 2; }
            for (int64_t i = 0; i < k; i++) {
                if (!range_free(S, heads[i], lens[i])) return -1;
                range_mark(S, heads[i], lens[i], 0);
            }
            set_runs(S, j, heads, lens, k, p);
            S->free_count -= p;
            return 0;
        }
    }
    if (S->strategy == SORTED_FREE_LIST) {
        free_ranks(S, win, p);
    } else { /* the min-span window */
        int64_t *fr = S->scratch, m = free_ranks(S, fr, n);
        if (m < p) return -1;
        int64_t bi = 0, bspan = INT64_MAX;
        if (S->ring) {
            for (int64_t i = 0; i < m; i++) {
                int64_t q = i + p - 1;
                int64_t span = (q < m ? fr[q] : fr[q - m] + n) - fr[i];
                if (span < bspan) { bspan = span; bi = i; }
            }
        } else {
            for (int64_t i = 0; i + p <= m; i++) {
                int64_t span = fr[i + p - 1] - fr[i];
                if (span < bspan) { bspan = span; bi = i; }
            }
        }
        for (int64_t t = 0; t < p; t++) win[t] = bi + t < m ? fr[bi + t] : fr[bi + t - m];
        /* carve each run of consecutive ranks, in window order */
        int64_t h = 0;
        for (int64_t t = 1; t <= p; t++) {
            if (t == p || win[t] != win[t - 1] + 1) {
                if (carve(S, win[h], t - h) < 0) return -1;
                h = t;
            }
        }
    }
    for (int64_t t = 0; t < p; t++) {
        if (!IS_FREE(S, win[t])) return -1;
        S->free_w[win[t] >> 6] &= ~(1ULL << (win[t] & 63));
    }
    S->free_count -= p;
    /* the job's maximal runs, ascending: the window is ascending but for one wrap past rank n - 1 */
    int64_t rot = 0;
    for (int64_t t = 1; t < p; t++)
        if (win[t] < win[t - 1]) { rot = t; break; }
    int64_t prev = -1, head = -1;
    for (int64_t c = 0, i = rot; c < p; c++, i = i + 1 == p ? 0 : i + 1) {
        int64_t r = win[i];
        if (prev >= 0 && r == prev + S->run_len[prev]) {
            S->run_len[prev]++;
            continue;
        }
        S->run_len[r] = 1;
        S->run_next[r] = -1;
        if (prev >= 0) S->run_next[prev] = r; else head = r;
        prev = r;
    }
    S->job_head[j] = head;
    S->job_size[j] = p;
    return 0;
}

/* The placement memo's number for the grant of ranks a .. a+p-1: *fresh says whether it is new.
 * -1 when the memo is off or full. */
static int64_t memo_id(State *S, int64_t a, int64_t p, int *fresh) {
    *fresh = 1;
    if (!S->memo_cap) return -1;
    uint64_t key = (uint64_t)a * (uint64_t)(S->n + 1) + (uint64_t)p;
    uint64_t mask = (uint64_t)S->memo_slots - 1;
    for (uint64_t h = (key * 0x9E3779B97F4A7C15ULL) >> 20 & mask;; h = (h + 1) & mask) {
        if (S->memo_key[h] == (int64_t)key) { *fresh = 0; return S->memo_val[h]; }
        if (S->memo_key[h] < 0) {
            if (S->memo_used >= S->memo_cap) return -1;
            S->memo_key[h] = (int64_t)key;
            S->memo_val[h] = S->memo_used;
            return S->memo_used++;
        }
    }
}

/* End job j: free its ranks and give its runs back (_release).  Its nodes (sorted) are written to out
 * unless the memo has seen its placement (one run of ranks) before; *id gets the memo's number (a
 * placement seen before, nothing written), -2 - number (new, written) or -1 (no number, written).
 * Returns the number of nodes written, -1 on an inconsistency. */
static int64_t release(State *S, int64_t j, int64_t *out, int64_t *id) {
    int64_t r = S->job_head[j], p = S->job_size[j];
    if (r < 0) return -1;
    int64_t c = 0;
    for (int64_t q = r; q >= 0; q = S->run_next[q]) {
        range_mark(S, q, S->run_len[q], 1);
        c += S->run_len[q];
    }
    if (c != p) return -1;
    if (S->strategy != SORTED_FREE_LIST)
        for (int64_t q = r; q >= 0; q = S->run_next[q]) give_back(S, q, S->run_len[q]);
    S->free_count += p;
    S->job_head[j] = -1;
    int fresh = 1;
    int64_t k = S->run_next[r] < 0 ? memo_id(S, r, p, &fresh) : -1;
    if (!fresh) { *id = k; return 0; }
    *id = k >= 0 ? -2 - k : -1;
    c = 0;
    for (int64_t q = r; q >= 0; q = S->run_next[q])
        for (int64_t t = 0; t < S->run_len[q]; t++) out[c++] = S->node_at_rank ? S->node_at_rank[q + t] : q + t;
    if (S->node_at_rank) sort_nodes(S, out, c);
    return c;
}

static void State_dealloc(State *S) {
    free(S->node_at_rank);
    free(S->free_w);
    free(S->len_at);
    free(S->start_at_end);
    free(S->starts);
    free(S->cnt_len);
    free(S->run_len);
    free(S->run_next);
    free(S->job_head);
    free(S->job_size);
    free(S->scratch);
    free(S->win);
    free(S->tmp);
    free(S->bits);
    free(S->memo_key);
    free(S->memo_val);
    Py_TYPE(S)->tp_free((PyObject *)S);
}

static int get_buffer(PyObject *o, Py_buffer *b, int writable, const char *name) {
    if (PyObject_GetBuffer(o, b, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (b->itemsize != 8 || b->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s: expected a one-dimensional array of 8-byte items", name);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static PyObject *State_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"n", "strategy", "ring", "node_at_rank", "jobs", "memo", NULL};
    long long n, jobs, memo = 0;
    int strategy, ring;
    PyObject *nar;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LipOL|L", names, &n, &strategy, &ring, &nar, &jobs, &memo)) return NULL;
    if (n < 1 || jobs < 0 || strategy < 0 || strategy > 3 || memo < 0 || memo > (1LL << 30))
        return PyErr_Format(PyExc_ValueError, "State: n=%lld, strategy=%d, jobs=%lld, memo=%lld out of range", n, strategy, jobs, memo);
    State *S = (State *)type->tp_alloc(type, 0);
    if (!S) return NULL;
    S->n = n;
    S->strategy = strategy;
    S->ring = ring;
    S->jobs = jobs;
    size_t N = (size_t)n, J = (size_t)(jobs ? jobs : 1);
    S->free_w = calloc((N + 63) / 64, sizeof(uint64_t));
    S->len_at = calloc(N, sizeof(int64_t));
    S->start_at_end = malloc((N + 1) * sizeof(int64_t));
    S->starts = malloc(N * sizeof(int64_t));
    S->cnt_len = calloc(N + 1, sizeof(int64_t));
    S->run_len = calloc(N, sizeof(int64_t));
    S->run_next = malloc(N * sizeof(int64_t));
    S->job_head = malloc(J * sizeof(int64_t));
    S->job_size = calloc(J, sizeof(int64_t));
    S->scratch = malloc(N * sizeof(int64_t));
    S->win = malloc(N * sizeof(int64_t));
    S->tmp = malloc(N * sizeof(int64_t));
    S->bits = calloc((N + 63) / 64, sizeof(uint64_t));
    S->memo_cap = memo;
    S->memo_slots = 1;
    while (S->memo_slots < 2 * memo) S->memo_slots <<= 1;
    S->memo_key = malloc((size_t)S->memo_slots * sizeof(int64_t));
    S->memo_val = malloc((size_t)S->memo_slots * sizeof(int64_t));
    if (S->memo_key) for (int64_t i = 0; i < S->memo_slots; i++) S->memo_key[i] = -1;
    if (!S->free_w || !S->len_at || !S->start_at_end || !S->starts || !S->cnt_len || !S->run_len || !S->run_next ||
        !S->job_head || !S->job_size || !S->scratch || !S->win || !S->tmp || !S->bits || !S->memo_key || !S->memo_val) {
        Py_DECREF(S);
        return PyErr_NoMemory();
    }
    if (nar != Py_None) {
        Py_buffer b;
        if (get_buffer(nar, &b, 0, "node_at_rank") < 0) { Py_DECREF(S); return NULL; }
        if (b.shape[0] != n) {
            PyBuffer_Release(&b);
            Py_DECREF(S);
            return PyErr_Format(PyExc_ValueError, "node_at_rank: %zd entries for %lld nodes", b.shape[0], n);
        }
        S->node_at_rank = malloc(N * sizeof(int64_t));
        if (!S->node_at_rank) { PyBuffer_Release(&b); Py_DECREF(S); return PyErr_NoMemory(); }
        memcpy(S->node_at_rank, b.buf, N * sizeof(int64_t));
        PyBuffer_Release(&b);
        for (int64_t r = 0; r < n; r++)
            if (S->node_at_rank[r] < 0 || S->node_at_rank[r] >= n) { Py_DECREF(S); return PyErr_Format(PyExc_ValueError, "node_at_rank: node %lld out of range", (long long)S->node_at_rank[r]); }
    }
    for (size_t r = 0; r < N; r++) S->free_w[r >> 6] |= 1ULL << (r & 63);
    for (size_t i = 0; i <= N; i++) S->start_at_end[i] = -1;
    for (size_t i = 0; i < J; i++) S->job_head[i] = -1;
    S->free_count = n;
    S->m = 0;
    if (strategy != SORTED_FREE_LIST) iv_add(S, 0, n);
    return (PyObject *)S;
}

PyDoc_STRVAR(replay_doc,
"replay(log, pos, sizes, out_nodes, out_jobs, out_ids, node_limit, job_limit) -> (pos, jobs, nodes)\n\n"
"Apply log[pos:] (int64; e >= 0 job e starts with sizes[e] ranks, e < 0 job -1-e ends); for each ended\n"
"job write its position to out_jobs, its memo number to out_ids (>= 0: a placement seen before, no\n"
"nodes written; -2 - number: new, written; -1: written, no number) and its sorted nodes to out_nodes;\n"
"stop right after the end that brings the ended jobs' sizes to node_limit or their count to job_limit,\n"
"or at the log's end.  out_nodes must hold node_limit - 1 + n nodes, out_jobs and out_ids job_limit.\n"
"Returns the log position reached, the jobs ended and the nodes written.");

static PyObject *State_replay(State *S, PyObject *args) {
    PyObject *olog, *osizes, *onodes, *ojobs, *oids;
    long long pos, node_limit, job_limit;
    if (!PyArg_ParseTuple(args, "OLOOOOLL", &olog, &pos, &osizes, &onodes, &ojobs, &oids, &node_limit, &job_limit)) return NULL;
    Py_buffer bl, bs, bn, bj, bi;
    if (get_buffer(olog, &bl, 0, "log") < 0) return NULL;
    if (get_buffer(osizes, &bs, 0, "sizes") < 0) { PyBuffer_Release(&bl); return NULL; }
    if (get_buffer(onodes, &bn, 1, "out_nodes") < 0) { PyBuffer_Release(&bl); PyBuffer_Release(&bs); return NULL; }
    if (get_buffer(ojobs, &bj, 1, "out_jobs") < 0) { PyBuffer_Release(&bl); PyBuffer_Release(&bs); PyBuffer_Release(&bn); return NULL; }
    if (get_buffer(oids, &bi, 1, "out_ids") < 0) { PyBuffer_Release(&bl); PyBuffer_Release(&bs); PyBuffer_Release(&bn); PyBuffer_Release(&bj); return NULL; }
    const int64_t *log = bl.buf, *sizes = bs.buf;
    int64_t *out = bn.buf, *outj = bj.buf, *outi = bi.buf;
    int64_t nlog = bl.shape[0], ncap = bn.shape[0], jcap = bj.shape[0] < bi.shape[0] ? bj.shape[0] : bi.shape[0];
    int64_t nj = 0, nn = 0, counted = 0;
    const char *err = NULL;
    long long bad = 0;
    if (bs.shape[0] != S->jobs) err = "sizes: not one per job";
    else if (pos < 0 || pos > nlog) err = "pos out of range";
    else if (node_limit < 1 || job_limit < 1 || job_limit > jcap || ncap < node_limit - 1 + S->n) err = "output buffers smaller than the limits";
    while (!err && pos < nlog) {
        int64_t e = log[pos];
        int64_t j = e >= 0 ? e : -1 - e;
        if (j >= S->jobs) { err = "job position out of range"; bad = e; break; }
        if (e >= 0) {
            if (allocate(S, j, sizes[j]) < 0) { err = "a start the allocator cannot grant (not a counting run?)"; bad = j; break; }
            pos++;
            continue;
        }
        int64_t p = S->job_size[j];
        int64_t c = release(S, j, out + nn, outi + nj);
        if (c < 0) { err = "an end of a job that holds nothing"; bad = j; break; }
        pos++;
        nn += c;
        counted += p;
        outj[nj++] = j;
        if (counted >= node_limit || nj >= job_limit) break;
    }
    PyBuffer_Release(&bl);
    PyBuffer_Release(&bs);
    PyBuffer_Release(&bn);
    PyBuffer_Release(&bj);
    PyBuffer_Release(&bi);
    if (err) return PyErr_Format(PyExc_RuntimeError, "linear replay: %s (job or entry %lld, log position %lld)", err, bad, pos);
    return Py_BuildValue("LLL", (long long)pos, (long long)nj, (long long)nn);
}

PyDoc_STRVAR(intervals_doc, "intervals() -> list of (start, length): the free intervals, by start (for tests).");

static PyObject *State_intervals(State *S, PyObject *unused) {
    (void)unused;
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int64_t i = 0; i < S->m; i++) {
        PyObject *t = Py_BuildValue("(LL)", (long long)S->starts[i], (long long)S->len_at[S->starts[i]]);
        if (!t || PyList_Append(list, t) < 0) { Py_XDECREF(t); Py_DECREF(list); return NULL; }
        Py_DECREF(t);
    }
    return list;
}

static PyMethodDef State_methods[] = {
    {"replay", (PyCFunction)State_replay, METH_VARARGS, replay_doc},
    {"intervals", (PyCFunction)State_intervals, METH_NOARGS, intervals_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "topoalloc.alloc.linear._clinear.State",
    .tp_basicsize = sizeof(State),
    .tp_dealloc = (destructor)State_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "State(n, strategy, ring, node_at_rank, jobs, memo=0): a linear allocator's free ranks and intervals (see the\n"
              "module); memo: how many placements of one run of ranks to number (0: none, every job's nodes written).",
    .tp_methods = State_methods,
    .tp_new = State_new,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_clinear", "The linear allocators' grants, replayed in C (see allocator.py).", -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__clinear(void) {
    if (PyType_Ready(&StateType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&StateType);
    if (PyModule_AddObject(m, "State", (PyObject *)&StateType) < 0) { Py_DECREF(&StateType); Py_DECREF(m); return NULL; }
    return m;
}
