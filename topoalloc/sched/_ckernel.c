/*
 * A whole simulation over processor counts, for counting allocators whose
 * placement nobody needs (see fastpath.py, which decides when it applies).
 *
 * This is a translation of the pure-Python engine, which stays the reference
 * and documents the model: simulation.py (the clock: completions, arrivals,
 * one pass, wake-ups), base.py (the running jobs by expected end, the "next
 * instant" rule), fcfs.py, easy.py (heads, shadow time, extra nodes, the
 * arrivals-only pass, the "room" shortcut), conservative.py and plan.py
 * (reservations, compression, stale plans, ZERO_LENGTH, wake-ups).  Every
 * floating-point value is computed by the same operations in the same order
 * (now + run, now + estimate, latest_end_by(shadow, now), end_at(t, span)), so the decisions are
 * the same to the last bit; the differential tests compare the two job by job.
 *
 * With a layout (1 buddy, 2 Gray code: alloc/hypercube/allocators.py), every
 * scheduler runs on the busy mask of a hypercube instead of a count: a job
 * needs a window of 2**k positions (its allocated size), placed first fit
 * by the same pure function of the mask as the allocator's _place, the
 * shadow time is the first release after which the head has a window
 * (_SubcubeBase.earliest_fit), and a backfill candidate running past it is
 * admitted iff the head still has a window in the shadow mask with the
 * candidate's window added (_MaskGuard); conservative backfilling replays its
 * plan on masks (conservative_pass_mask) as plan.ReplayPlan replays it on
 * snapshots of the allocator.  Positions are addresses for the
 * buddy and places in the Gray order for Gray code; the nodes themselves
 * come from replaying the log through the allocator when they are wanted.
 * Layout 3 is the free list (and the AFL while every mesh fills its cube):
 * it places by its lists of free cubes, which the kernel keeps as the
 * allocator does (fl_alloc, fl_release); whether a cube fits a mask is
 * complete recognition (recognisable), and a refused backfill candidate is
 * allocated and released again, as EASY does, since that may rearrange the
 * lists (fl_trial).  Conservative backfilling's plan keeps the lists of
 * each of its states beside the mask (plan_replay, trial_mask: a snapshot's
 * lists, as ReplayPlan replays them).  Layout 5 is the free list that looks at
 * its lists only (recognition="lists", or a cube above Q12, where the allocator
 * has no complete recognition): the same lists, no recognition (s->recognise
 * 0), so whether a cube fits is the lists' question, not the mask's, and only
 * FCFS and conservative run on it (EASY's shadow asks the mask); up to Q15
 * (a cube's key, free << dim | value, is an int32).
 *
 * The Python side owns every array; this file keeps no state between calls.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;
typedef int32_t i32;
typedef uint64_t u64;

enum { K_FCFS = 0, K_EASY = 1, K_CONSERVATIVE = 2 };
/* status codes returned to Python (with one job position) */
enum { ST_OK = 0, ST_NEVER_STARTED = 1, ST_HEAD_NEVER_FITS = 2, ST_PROFILE_NEVER_FITS = 3, ST_PLAN_NEVER_FITS = 4, ST_PLAN_BROKEN = 5, ST_LISTS_BROKEN = 6 };

/* plan.ZERO_LENGTH: a reservation holds its processors for at least this long */
#define ZERO_LENGTH 1e-6

/* ------------------------------------------------------------ growable arrays */

static int grow_to(void **p, i64 *cap, i64 need, size_t item) {
    i64 c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * item);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static inline int grow(void **p, i64 *cap, i64 need, size_t item) {
    return need <= *cap ? 0 : grow_to(p, cap, need, item);
}

/* ------------------------------------------------------------ the event heap */
/* (time, sequence, job): a completion, or a wake-up (job -1), as simulation.py's heap */

typedef struct { double t; i64 seq; i64 job; } Event;
typedef struct { Event *a; i64 n, cap; } Heap;

static inline int ev_less(const Event *x, const Event *y) {
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int heap_push(Heap *h, double t, i64 seq, i64 job) {
    if (grow((void **)&h->a, &h->cap, h->n + 1, sizeof(Event)) < 0) return -1;
    i64 i = h->n++;
    Event e = {t, seq, job};
    while (i > 0) {
        i64 p = (i - 1) / 2;
        if (!ev_less(&e, &h->a[p])) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = e;
    return 0;
}

static Event heap_pop(Heap *h) {
    Event top = h->a[0];
    Event last = h->a[--h->n];
    i64 i = 0, n = h->n;
    for (;;) {
        i64 c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ev_less(&h->a[c + 1], &h->a[c])) c++;
        if (!ev_less(&h->a[c], &last)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (n) h->a[i] = last;
    return top;
}

/* ------------------------------------------------- pending wake-up instants */
/* simulation.py's set of wake-up times on the heap: an open-addressing set of doubles */

typedef struct { double *t; unsigned char *used; i64 cap, n, filled; } TimeSet; /* used: 0 empty, 1 full, 2 deleted */

static u64 hash_time(double t) {
    t += 0.0; /* -0.0 and 0.0 are one key, as in a Python set */
    u64 b;
    memcpy(&b, &t, sizeof b);
    b ^= b >> 33; b *= 0xff51afd7ed558ccdULL; b ^= b >> 33; b *= 0xc4ceb9fe1a85ec53ULL; b ^= b >> 33;
    return b;
}

static i64 ts_find(const TimeSet *s, double t) {
    if (!s->cap) return -1;
    u64 mask = (u64)s->cap - 1;
    for (u64 i = hash_time(t) & mask;; i = (i + 1) & mask) {
        if (!s->used[i]) return -1;
        if (s->used[i] == 1 && s->t[i] == t) return (i64)i;
    }
}

static void ts_put(TimeSet *s, double t) {
    u64 mask = (u64)s->cap - 1;
    for (u64 i = hash_time(t) & mask;; i = (i + 1) & mask) {
        if (s->used[i] != 1) {
            if (!s->used[i]) s->filled++;
            s->used[i] = 1;
            s->t[i] = t;
            s->n++;
            return;
        }
    }
}

/* add t (not present): rehash first while more than 3/4 of the slots are full or deleted */
static int ts_add(TimeSet *s, double t) {
    if (4 * (s->filled + 1) > 3 * s->cap) {
        i64 cap = 64;
        while (4 * (s->n + 1) > cap) cap *= 2;
        TimeSet m = {calloc((size_t)cap, sizeof(double)), calloc((size_t)cap, 1), cap, 0, 0};
        if (!m.t || !m.used) { free(m.t); free(m.used); return -1; }
        for (i64 i = 0; i < s->cap; i++)
            if (s->used[i] == 1) ts_put(&m, s->t[i]);
        free(s->t); free(s->used);
        *s = m;
    }
    ts_put(s, t);
    return 0;
}

static void ts_discard(TimeSet *s, double t) {
    i64 i = ts_find(s, t);
    if (i >= 0) { s->used[i] = 2; s->n--; }
}

/* ------------------------------------------------- bit sets over ranks */
/* A set of ranks 0..n-1 as bits, with one bit per nonzero word at each level above, so that
 * the next or previous member is found in a few words whatever the gaps. */

typedef struct {
    int levels;
    u64 *bits[8];      /* bits[0]: one bit per rank; bits[l+1]: one per nonzero word of bits[l] */
    i64 words[8];
} Bits;

static int bs_init(Bits *b, i64 n) {
    memset(b, 0, sizeof *b);
    i64 m = n ? n : 1;
    do {
        i64 w = (m + 63) / 64;
        b->words[b->levels] = w;
        b->bits[b->levels] = calloc((size_t)w, sizeof(u64));
        if (!b->bits[b->levels]) return -1;
        b->levels++;
        m = w;
    } while (m > 1 && b->levels < 8);
    return 0;
}

static void bs_free(Bits *b) {
    for (int l = 0; l < b->levels; l++) free(b->bits[l]);
}

static void bs_set(Bits *b, i64 r) {
    for (int l = 0; l < b->levels; l++) {
        u64 *w = &b->bits[l][r >> 6];
        int was = *w != 0;
        *w |= 1ULL << (r & 63);
        if (was) break;
        r >>= 6;
    }
}

static void bs_clear(Bits *b, i64 r) {
    for (int l = 0; l < b->levels; l++) {
        u64 *w = &b->bits[l][r >> 6];
        *w &= ~(1ULL << (r & 63));
        if (*w) break;
        r >>= 6;
    }
}

/* the word `wi` of level l of the union of the bit sets b[k], k in `act` */
static inline u64 bs_word(const Bits *b, u64 act, int l, i64 wi) {
    u64 w = 0;
    for (u64 a = act; a; a &= a - 1) w |= b[__builtin_ctzll(a)].bits[l][wi];
    return w;
}

/* the smallest rank > r in the union of the bit sets b[k], k in `act`, or -1 (all of the
 * same shape) */
static i64 bs_next_any(const Bits *b, u64 act, i64 r) {
    if (!act) return -1;
    const Bits *b0 = &b[__builtin_ctzll(act)];
    int l = 0;
    i64 x = r + 1; /* the first position to look at, at level l */
    for (;;) {
        if (l >= b0->levels) return -1;
        i64 wi = x >> 6;
        if (wi >= b0->words[l]) return -1;
        u64 w = bs_word(b, act, l, wi) & (~0ULL << (x & 63));
        if (w) { x = (wi << 6) + __builtin_ctzll(w); break; }
        x = wi + 1; /* the words after wi, one level up */
        l++;
    }
    while (l > 0) {
        l--;
        x = (x << 6) + __builtin_ctzll(bs_word(b, act, l, x));
    }
    return x;
}

/* the largest member < r, or -1 */
static i64 bs_prev(const Bits *b, i64 r) {
    int l = 0;
    i64 x = r;
    for (;;) {
        if (l >= b->levels) return -1;
        i64 wi = x >> 6;
        int bit = (int)(x & 63);
        u64 w = b->bits[l][wi] & ((1ULL << bit) - 1);
        if (w) { x = (wi << 6) + 63 - __builtin_clzll(w); break; }
        if (wi == 0) return -1;
        x = wi; /* look at the words before wi, one level up */
        l++;
    }
    while (l > 0) {
        l--;
        x = (x << 6) + 63 - __builtin_clzll(b->bits[l][x]);
    }
    return x;
}

/* ------------------------------------------------------------ the wait queue */
/* Queued jobs in queue order (a permutation rank: the scheduler's queue key),
 * as a doubly linked list over job positions, with a bit set over ranks to
 * find where an arrival goes. */

typedef struct {
    i32 *next, *prev;
    i32 head, tail;
    i64 len;
    const i64 *rank;   /* job -> rank, or NULL: rank = position (FCFS order) */
    i32 *job_at;       /* rank -> job (NULL with rank NULL) */
    Bits ranks;        /* the queued jobs' ranks */
} Queue;

static inline i64 q_rank(const Queue *q, i64 j) { return q->rank ? q->rank[j] : j; }
static inline i64 q_job(const Queue *q, i64 r) { return q->job_at ? q->job_at[r] : r; }

static int q_init(Queue *q, i64 n, const i64 *rank) {
    memset(q, 0, sizeof *q);
    q->head = q->tail = -1;
    q->rank = rank;
    q->next = malloc((size_t)(n ? n : 1) * sizeof(i32));
    q->prev = malloc((size_t)(n ? n : 1) * sizeof(i32));
    if (!q->next || !q->prev) return -1;
    if (rank) {
        q->job_at = malloc((size_t)(n ? n : 1) * sizeof(i32));
        if (!q->job_at) return -1;
        for (i64 j = 0; j < n; j++) q->job_at[j] = -1;
        for (i64 j = 0; j < n; j++) {
            if (q->job_at[rank[j]] >= 0) return -2; /* not a permutation */
            q->job_at[rank[j]] = (i32)j;
        }
    }
    return bs_init(&q->ranks, n);
}

static void q_free(Queue *q) {
    free(q->next); free(q->prev); free(q->job_at);
    bs_free(&q->ranks);
}

static void q_insert(Queue *q, i64 j) {
    i64 r = q_rank(q, j);
    i64 after = -1;
    if (q->tail < 0) after = -1;
    else if (q_rank(q, q->tail) < r) after = q->tail;
    else {
        i64 pr = bs_prev(&q->ranks, r);
        after = pr < 0 ? -1 : q_job(q, pr);
    }
    i32 nx = after < 0 ? q->head : q->next[after];
    q->prev[j] = (i32)after;
    q->next[j] = nx;
    if (after < 0) q->head = (i32)j; else q->next[after] = (i32)j;
    if (nx < 0) q->tail = (i32)j; else q->prev[nx] = (i32)j;
    bs_set(&q->ranks, r);
    q->len++;
}

static void q_remove(Queue *q, i64 j) {
    i32 p = q->prev[j], nx = q->next[j];
    if (p < 0) q->head = nx; else q->next[p] = nx;
    if (nx < 0) q->tail = p; else q->prev[nx] = p;
    bs_clear(&q->ranks, q_rank(q, j));
    q->len--;
}

/* ------------------------------------------ sizes of queued jobs (Fenwick) */
/* base.WaitingSizes: "could any queued job fit in `free` processors?" */

typedef struct { i32 *t; i64 n; } Fenwick;

static void fw_add(Fenwick *f, i64 size, i32 d) {
    for (i64 i = size; i <= f->n; i += i & -i) f->t[i] += d;
}

static i64 fw_at_most(const Fenwick *f, i64 limit) {
    if (limit > f->n) limit = f->n;
    i64 s = 0;
    for (i64 i = limit; i > 0; i -= i & -i) s += f->t[i];
    return s;
}

/* ----------------------------------------------------------- running jobs */
/* Sorted by (expected end, start number), as SchedulingContext.running. */

typedef struct { double ee; i64 serial; i64 job; i64 size; } Run;
typedef struct { Run *a; i64 n, cap; } Running;

static int run_insert(Running *r, double ee, i64 serial, i64 job, i64 size) {
    if (grow((void **)&r->a, &r->cap, r->n + 1, sizeof(Run)) < 0) return -1;
    /* after every entry with ee' <= ee: the new start number is the largest */
    i64 lo = 0, hi = r->n;
    while (lo < hi) {
        i64 mid = (lo + hi) / 2;
        if (r->a[mid].ee <= ee) lo = mid + 1; else hi = mid;
    }
    memmove(&r->a[lo + 1], &r->a[lo], (size_t)(r->n - lo) * sizeof(Run));
    r->a[lo] = (Run){ee, serial, job, size};
    r->n++;
    return 0;
}

static void run_remove(Running *r, double ee, i64 job) {
    i64 lo = 0, hi = r->n;
    while (lo < hi) {
        i64 mid = (lo + hi) / 2;
        if (r->a[mid].ee < ee) lo = mid + 1; else hi = mid;
    }
    while (lo < r->n && r->a[lo].job != job) lo++;
    if (lo < r->n) {
        memmove(&r->a[lo], &r->a[lo + 1], (size_t)(r->n - lo - 1) * sizeof(Run));
        r->n--;
    }
}

/* easy.latest_end_by: the largest estimate e with now + e <= shadow (every expected end is such a sum;
 * shadow - now alone can be a unit in the last place off either way at large times).  Float addition is
 * monotone, so a feasible e whose next float is not feasible is the answer.  Where the difference is not it
 * (a short wait at a large time: the difference's units are far finer than now's), the answer is near the
 * difference plus half the gap above shadow, the least sum that rounds past it, so a few steps from there
 * find it; else (not reached in 20 M random cases) the bisection of easy.py between values a few units either
 * side.  The bisection alone took 20-odd halvings a pass, a tenth of EASY's time on a hypercube. */
static double latest_end_by(double shadow, double now) {
    double e = shadow - now;
    if (!isfinite(e) || (now + e <= shadow && shadow < now + nextafter(e, INFINITY))) return e;
    double c = e + (nextafter(shadow, INFINITY) - shadow) / 2;
    for (int i = 0; i < 4 && now + c > shadow; i++) c = nextafter(c, -INFINITY);
    if (now + c <= shadow) {
        int i = 0;
        for (; i < 4 && now + nextafter(c, INFINITY) <= shadow; i++) c = nextafter(c, INFINITY);
        if (i < 4) return c;
    }
    double u = 2 * fmax(fabs(shadow), fabs(now)) * DBL_EPSILON; /* at least 2 ulp of either */
    double lo = e - u, hi = e + u;
    while (now + lo > shadow) lo -= u;
    while (now + hi <= shadow) hi += u;
    for (;;) {
        double mid = lo + (hi - lo) / 2;
        if (!(lo < mid && mid < hi)) return lo;
        if (now + mid <= shadow) lo = mid;
        else hi = mid;
    }
}

/* SchedulingContext.expected_end: a job past its estimate ends at the next instant */
static inline double expected_end(double ee, double now) {
    return ee > now ? ee : nextafter(now, INFINITY);
}

/* ------------------------------------------------ conservative's profile */
/* plan.CountingProfile answers from the step function of free processors
 * over time alone: a start is feasible iff the function is >= the size over
 * its whole span, the earliest feasible start is always a breakpoint, and
 * breakpoints where the function does not change alter no answer.  So the
 * profile here is built differently but is the same function: each pass
 * merges the running jobs' expected releases (as plan.py's constructor
 * does) with the reservations' load, kept from pass to pass as a step
 * function of its own and changed only where a reservation is made, moved
 * or dropped. */

/* A step function: v[k] on [t[k], t[k+1]), the last segment unbounded. */
typedef struct { double *t; i64 *v; i64 n, cap_t, cap_v; } Steps;

static int steps_reserve(Steps *s, i64 need) {
    if (grow((void **)&s->t, &s->cap_t, need, sizeof(double)) < 0) return -1;
    return grow((void **)&s->v, &s->cap_v, need, sizeof(i64));
}

/* index of the first breakpoint >= t, from index `from` on (every breakpoint before it is < t) */
static inline i64 steps_lower_from(const Steps *s, double t, i64 from) {
    /* the first few in turn: a caller's `from` is most often at or just before the answer */
    for (int k = 0; k < 4; k++, from++)
        if (from >= s->n || !(s->t[from] < t)) return from;
    const double *base = s->t + from;
    i64 len = s->n - from;
    if (len <= 0) return from;
    while (len > 1) {
        i64 half = len / 2;
        base = base[half - 1] < t ? base + half : base;
        len -= half;
    }
    return (base - s->t) + (*base < t);
}

static inline i64 steps_lower(const Steps *s, double t) { return steps_lower_from(s, t, 0); }

/* make t a breakpoint (its value: the segment's it falls in, `outside` before the first); its
 * index (every breakpoint before index `from` is < t) */
static i64 steps_split_from(Steps *s, double t, i64 outside, i64 from) {
    i64 lo = steps_lower_from(s, t, from);
    if (lo < s->n && s->t[lo] == t) return lo;
    if (steps_reserve(s, s->n + 1) < 0) return -1;
    i64 before = lo > 0 ? s->v[lo - 1] : outside;
    memmove(&s->t[lo + 1], &s->t[lo], (size_t)(s->n - lo) * sizeof(double));
    memmove(&s->v[lo + 1], &s->v[lo], (size_t)(s->n - lo) * sizeof(i64));
    s->t[lo] = t;
    s->v[lo] = before;
    s->n++;
    return lo;
}

/* plan.CountingProfile._change: add delta on [t, end) (nothing if end == t, as there); every breakpoint before
 * index `from` is < t (a caller that knows where t is saves the search: steps_add looks from the start) */
static int steps_add_from(Steps *s, double t, double end, i64 delta, i64 outside, i64 from) {
    i64 i = steps_split_from(s, t, outside, from);
    if (i < 0) return -1;
    i64 j = steps_split_from(s, end, outside, i); /* end >= t */
    if (j < 0) return -1;
    for (i64 k = i; k < j; k++) s->v[k] += delta;
    return 0;
}

static inline int steps_add(Steps *s, double t, double end, i64 delta, i64 outside) { return steps_add_from(s, t, end, delta, outside, 0); }

static inline double span_of(double dur) { return dur > 0 ? dur : ZERO_LENGTH; }

/* plan._end: where a window of `span` from t ends, never closer than two float steps past t (within
 * 2**32 s of 0, t + ZERO_LENGTH is that far already; beyond, or for a shorter span, t + span can round
 * to t: the reservation would hold nothing, and the schedule would depend on where the clock starts) */
static __attribute__((noinline, cold)) double end_far(double t, double e) {
    double f = nextafter(nextafter(t, INFINITY), INFINITY);
    return e > f ? e : f;
}
static inline double end_at(double t, double span) {
    double e = t + span;
    if (__builtin_expect(fabs(t) < 4294967296.0 && span >= ZERO_LENGTH, 1)) return e;
    return end_far(t, e);
}

/* the profile at `now`: free processors now, plus the running jobs' releases at their
 * expected ends (the "next instant" mapping keeps the running list's order), minus the
 * reservations' load; a breakpoint wherever the result changes.  Returns 1 if it
 * is feasible (never negative), 0 if not, -1 on no memory. */
static int prof_build(Steps *p, double now, i64 free_now, const Running *r, const Steps *load) {
    if (steps_reserve(p, 1 + r->n + load->n) < 0) return -1;
    i64 ri = 0;
    while (ri < load->n && load->t[ri] <= now) ri++;
    i64 cur = ri > 0 ? load->v[ri - 1] : 0;
    i64 base = free_now, k = 0, n = 1;
    int ok = base - cur >= 0;
    p->t[0] = now;
    p->v[0] = base - cur;
    while (k < r->n || ri < load->n) {
        double tr = k < r->n ? expected_end(r->a[k].ee, now) : INFINITY;
        double tl = ri < load->n ? load->t[ri] : INFINITY;
        double t = tr < tl ? tr : tl;
        while (k < r->n && expected_end(r->a[k].ee, now) == t) base += r->a[k++].size;
        while (ri < load->n && load->t[ri] == t) cur = load->v[ri++];
        if (base - cur == p->v[n - 1]) continue; /* no change here: no breakpoint */
        p->t[n] = t;
        p->v[n] = base - cur;
        if (base - cur < 0) ok = 0;
        n++;
    }
    p->n = n;
    return ok;
}

/* the first segment from index k on, before `end`, short of `size` processors (the job's own
 * reservation, `old` to `old_end`, if `has`, counted free: its segments hold it), or n if the
 * profile holds the span (the sentinel stops the scans) */
static inline i64 span_short(const Steps *p, i64 k, double end, i64 size, int has, double old, double old_end) {
    const double *t = p->t;
    const i64 *v = p->v;
    i64 n = p->n;
    if (has) {
        /* end, old and old_end are finite or +inf, never NaN: t < min(a, b) is t < a && t < b, one test */
        double e = end < old ? end : old, f = end < old_end ? end : old_end;
        while (t[k] < e && v[k] >= size) k++;
        if (k < n && t[k] < end && !(t[k] < old))
            while (t[k] < f) k++;
    }
    while (t[k] < end && v[k] >= size) k++;
    return k < n && t[k] < end ? k : n;
}

/* plan.CountingProfile.earliest for a job whose own reservation, if it has one
 * (`old` to `old_end`), is taken out first.  It is read as taken out rather than
 * removed and added back, so a job that keeps its time changes nothing: the plan is
 * feasible (never negative), so with the job taken out its own segments hold it, and
 * `old` itself is a feasible start: no later start is looked at.  The same scan as
 * plan.py: a candidate fails at the first segment in its span short of processors,
 * and the next candidate is the first sufficient segment after that one.  Candidates
 * are the breakpoints from index `from` on and, for a job with a reservation, before
 * `limit` <= `old` (see conservative_pass for when the others are known to fail: the
 * answer is then `old`).  Returns 0 and the start in *out (and in *at its index, a breakpoint's, unless
 * the answer is `old`: then -1), or 1 if the job never fits.
 * The profile ends with a sentinel (see with_sentinel), which stops every scan: so the scans
 * test no index. */
static int prof_earliest(const Steps *p, i64 from, double limit, i64 size, double span, int has, double old, double old_end, double *out, i64 *at) {
    const double *t = p->t;
    const i64 *v = p->v;
    i64 n = p->n, i = from;
    for (;;) {
        if (has) while (t[i] < limit && v[i] < size) i++;
        else while (v[i] < size) i++;
        if (i >= n || (has && !(t[i] < limit))) break;
        i64 k = span_short(p, i + 1, end_at(t[i], span), size, has, old, old_end);
        if (k >= n) { *out = t[i]; *at = i; return 0; }
        i = k + 1;
    }
    if (has) { *out = old; *at = -1; return 0; }
    return 1;
}

/* a breakpoint past the last, at +inf, with more processors than any job asks for: every scan
 * of prof_earliest stops there (t < anything finite fails, v < size fails) */
static inline int with_sentinel(Steps *p) {
    if (steps_reserve(p, p->n + 1) < 0) return -1;
    p->t[p->n] = INFINITY;
    p->v[p->n] = INT64_MAX;
    return 0;
}

/* ------------------------------------------------------------- the kernel */

/* the free list's lists (layout 3), as a view of one record: the allocations the state holds (a plan's
 * replay resets the lists when that falls to 0) and the listed cubes' keys, list after list by dimension
 * (list d is key[at[d]] .. key[at[d+1]-1]), each list in (value, free) order.  The lists are sets; kept
 * in that order, the first of a list is the cube _take_list takes, and two records hold the same lists
 * iff their bytes are the same. */
typedef struct Lists { i64 *held; i32 *at; i32 *key; } Lists;

typedef struct {
    /* inputs */
    i64 n, nodes;
    const double *submit, *run, *est;
    const i64 *size;
    int kind, incremental;
    /* outputs */
    double *start, *end;
    i64 *log, nlog; /* optional: every start (j) and end (-1 - j) in the order applied (NULL: not kept) */
    /* state */
    Heap heap;
    TimeSet pending;
    Queue q;
    Fenwick waiting;
    Running running;
    i64 free, seq, serial;
    double now;
    int released;
    /* EASY */
    int reserved;
    i64 head;
    double shadow;
    i64 extra;
    /* conservative */
    double *res; /* NaN: no reservation */
    Steps prof;  /* free processors over time: built at a pass, then kept up to date (see conservative_pass);
                  * on a layout, the plan's free positions, built from it every pass (conservative_pass_mask) */
    int prof_kept; /* whether prof is the profile of the last pass, changed since by every early end */
    Steps load;  /* processors reserved over time (built from the reservations when the profile is rebuilt) */
    i64 live;    /* queued jobs holding a reservation */
    /* where the free processors may have grown since a job's earliest start was last
     * found (see conservative_pass): from `grown` to `grown_end` between the last pass and
     * this one; and through the moves of the last pass (queue rank, old start, old end:
     * pmv, in queue order; this pass's in mv) */
    double grown, grown_end;
    struct Mv *mv, *pmv;
    i64 nmv, npmv, cap_mv, cap_pmv;
    i64 *starting;   /* the jobs whose reservation is now, this pass, in queue order */
    double min_res;  /* the earliest reservation after the last pass (+inf: none) */
    double wake;  /* the wake-up this pass asked for, or NaN */
    /* layouts (buddy, Gray code): busy masks over positions, one bit each */
    int layout, dim;
    i64 words;
    u64 *busy, *sh, *trial; /* now; at the shadow time; a candidate's trial */
    u64 *sh2;               /* the free list: a third mask (fl_first_fit) */
    double *mest;           /* EASY: with cls, the least estimate among the queued jobs of each word (64 ranks) of
                             * each cls[k] (+inf: none), at mest[k * mwords + word] (see walk_word) */
    i64 mwords;
    Bits *cls;              /* EASY: the queued jobs' ranks by window size (cls[k]: windows of 2**k), or NULL;
                             * EASY's walk on a layout follows their union (see easy_pass_mask) */
    i64 *pos;               /* each running job's first position */
    /* conservative on a layout: plan.ReplayPlan on busy masks (see conservative_pass_mask) */
    struct PEv *ev;         /* the plan's events in replay order */
    i64 ne, cap_ev;
    struct PEv *ev2, *ev3;  /* room to build them in */
    i64 cap_ev2, cap_ev3;
    int st_valid;           /* st holds the kept masks of ev (the last replay went to its end) */
    int plan_same;          /* the plan (events, kept masks) is the last pass's, and still this one's but for now */
    u64 *st;                /* the kept masks: the busy mask before event i is record mslot[i] of st (`words` words
                             * each), so states move by their slots, not their words (see st_move) */
    i64 cap_st, nmslot, cap_mslot;
    i32 *mslot;
    i64 swords;             /* words of a kept mask: `words`, but 0 on the free list without recognition (layout 5),
                             * where nothing reads a state's mask (what fits is its lists' answer, and the lists
                             * hold every free node, so equal lists are equal masks) */
    u64 *fit_known, *fit_yes; /* per state: the window dimensions asked about, and those that fit */
    i64 cap_fit;
    /* ... and on the free list, each kept state's lists too: state i's is record lslot[i] of lsbuf (so
     * states move by their slots); two more records are scratch (ls_tmp: plan_replay, ls_trial) */
    char *lsbuf;
    i64 cap_ls, nslot, cap_lslot;
    i32 *lslot;
    i32 ls_tmp, ls_trial;
    i64 *prio;              /* a queued job's place in the queue, this pass */
    i64 *cp;                /* a reservation's window in the plan's replay */
    i64 *tp;                /* ... and in the trial replay of the current job */
    i64 *tstamp;            /* the trial a reservation was placed in (tp valid) */
    unsigned char *disp;    /* placed elsewhere than in the plan, in the current trial */
    unsigned char *blocked; /* every start before its reservation failed on the counts at its last search */
    i64 trials;
    /* the free list (layout 3: FreeListAllocator, and the AFL while every mesh fills its cube): the
     * listed free cubes, per dimension, as keys free << dim | value; each node's listed cube */
    Lists L;                /* the allocator's lists now (a view of `real`) */
    int recognise;          /* 1: complete recognition when the lists have no cube (layout 3); 0: the lists only (layout 5) */
    char *real;
    i64 recsize;            /* bytes of one record of lists (lists_view) */
    u64 *g;                 /* scratch: the free subcubes' bases, a mask per level (subcube_search), 0 but where */
    i32 *gw;                /* each level lists its words (gn of them) */
    i64 *gn;
    struct RecMemo *rc;     /* complete recognition's answers by (busy mask, k), direct mapped (RC_SLOTS), on cubes of
                             * RC_MIN_DIM or more, or NULL; rcmask holds each slot's mask */
    u64 *rcmask;
    char *snap;             /* scratch: a record of the lists before a refused candidate's trial */
    i32 *carve;             /* scratch: the listed cubes a recognised cube meets (fl_carve) */
    i64 *tried;             /* (log position, job) of every refused candidate's allocate-and-release */
    i64 ntried, cap_tried;
    i64 changes;            /* conservative: reservations made or moved (Conservative.reservation_changes) */
    /* a table of windows (layout 4: the static slice rule, SliceAllocator): a job's class is its volume's
     * (jcls), and the windows of class c are the masks tab[c0 .. c1-1] (c0 = tlo[c], c1 = tlo[c + 1]), `words`
     * words each, in the allocator's search order; a window is placed as the first of its class that is all
     * free, and a job's position is its window's row */
    const u64 *tab;
    const i64 *tlo, *jcls;
    i64 ncls;
    i32 *tspan;             /* per row: its first and last word that is not 0 (a box's units are a few words) */
    /* progress: a callable given the count of jobs ended, every `ptick` ends (NULL: none) */
    PyObject *progress;
    i64 ended, ptick, pnext;
    /* error */
    i64 err_job;
} Sim;

enum { L_COUNT = 0, L_BUDDY = 1, L_GRAY = 2, L_FREE = 3, L_TABLE = 4 };
/* the layout argument for the free list without complete recognition: L_FREE with s->recognise 0 */
enum { L_FREE_LISTS = 5 };

/* a reservation that moved in a pass: the job's place in the queue, where it was */
typedef struct Mv { i64 rank; double a, c; } Mv;

/* an event of conservative's plan on a layout, as plan.ReplayPlan orders them: (t, kind, order, key job);
 * kind 0 releases (a running job's window: order its start number, key job 0; a reservation's end:
 * order -1, key job the job) before kind 1 allocations (a reservation's start: order its place in the
 * queue); `who` is the job whose window it frees or takes, `res` whether it is a reservation's */
typedef struct PEv { double t; i64 order, keyjob, who; int kind, res; } PEv;

/* ------------------------------------------------- busy masks (layouts) */
static inline u64 low_bits(i64 bits) { return bits >= 64 ? ~(u64)0 : (((u64)1 << bits) - 1); }

/* bits at multiples of 2**l within a word (l <= 6) */
static const u64 ALIGNED[7] = {~(u64)0, 0x5555555555555555ULL, 0x1111111111111111ULL, 0x0101010101010101ULL,
                               0x0001000100010001ULL, 0x0000000100000001ULL, 1};

/* free positions of word w (positions past the machine count as busy) */
static inline u64 free_word(const Sim *s, const u64 *m, i64 w) {
    return ~m[w] & low_bits(s->nodes);
}

/* bit p set iff the 2**l positions from p (p a multiple of 2**l, l <= 6) are all free */
static inline u64 aligned_runs(u64 f, int l) {
    for (int i = 0; i < l; i++) f &= f >> (1 << i);
    return f & ALIGNED[l];
}

static int words_clear(const u64 *m, i64 w, i64 nw) {
    for (i64 i = 0; i < nw; i++)
        if (m[w + i]) return 0;
    return 1;
}

/* set (on) or clear positions a .. a+len-1, cyclically */
static void mark(const Sim *s, u64 *m, i64 a, i64 len, int on) {
    if (a + len <= s->nodes && (a & 63) + len <= 64) { /* within one word, no wrap */
        u64 mk = low_bits(len) << (a & 63);
        if (on) m[a >> 6] |= mk; else m[a >> 6] &= ~mk;
        return;
    }
    if (a + len <= s->nodes && !(a & 63) && !(len & 63)) { /* whole words, no wrap */
        memset(&m[a >> 6], on ? 0xff : 0, (size_t)(len >> 6) * sizeof(u64));
        return;
    }
    while (len > 0) {
        i64 p = a % s->nodes;
        i64 chunk = len < s->nodes - p ? len : s->nodes - p;
        for (i64 q = p, rem = chunk; rem > 0;) {
            int off = (int)(q & 63);
            i64 bits = rem < 64 - off ? rem : 64 - off;
            u64 mk = low_bits(bits) << off;
            if (on) m[q >> 6] |= mk; else m[q >> 6] &= ~mk;
            q += bits;
            rem -= bits;
        }
        a = p + chunk;
        len -= chunk;
    }
}

/* BuddyAllocator._place: the first aligned block of 2**k free positions, or -1 */
static i64 buddy_place(const Sim *s, const u64 *m, int k) {
    if (k <= 6) {
        for (i64 w = 0; w < s->words; w++) {
            if (!~m[w]) continue; /* all busy */
            u64 f = aligned_runs(free_word(s, m, w), k);
            if (f) return w * 64 + __builtin_ctzll(f);
        }
        return -1;
    }
    i64 nw = ((i64)1 << k) >> 6;
    for (i64 w = 0; w < s->words; w += nw)
        if (words_clear(m, w, nw)) return w * 64;
    return -1;
}

/* GrayCodeAllocator._place: the first window of 2**k cyclically consecutive free positions
 * starting at a multiple of 2**(k-1) (k = 0: any free position; the whole cube: position 0) */
static i64 gray_place(const Sim *s, const u64 *m, int k) {
    if (k == s->dim) return words_clear(m, 0, s->words) ? 0 : -1;
    if (k == 0) return buddy_place(s, m, 0);
    int l = k - 1;
    i64 step = (i64)1 << l;
    if (step < 64) { /* a window is two free aligned halves, the next one cyclically */
        i64 top = (s->nodes < 64 ? s->nodes : 64) - step; /* the last half of a word */
        u64 first = aligned_runs(free_word(s, m, 0), l), cur = first;
        for (i64 w = 0; w < s->words; w++) {
            u64 next = w + 1 < s->words ? aligned_runs(free_word(s, m, w + 1), l) : first;
            u64 g = cur & (cur >> step) & low_bits(top);
            if (((cur >> top) & 1) && (next & 1)) g |= (u64)1 << top;
            if (g) return w * 64 + __builtin_ctzll(g);
            cur = next;
        }
        return -1;
    }
    i64 sw = step >> 6, halves = s->nodes / step;
    int first = words_clear(m, 0, sw), cur = first;
    for (i64 i = 0; i < halves; i++) {
        int next = i + 1 < halves ? words_clear(m, (i + 1) * sw, sw) : first;
        if (cur && next) return i * step;
        cur = next;
    }
    return -1;
}

/* whether table row r is all free in mask m (over its words that are not 0) */
static inline int row_free(const Sim *s, const u64 *m, i64 r) {
    const u64 *w = s->tab + (size_t)r * (size_t)s->words;
    for (i32 i = s->tspan[2 * r], e = s->tspan[2 * r + 1]; i <= e; i++)
        if (m[i] & w[i]) return 0;
    return 1;
}

/* the table's first window of class c all free in mask m (its row), or -1 */
static i64 table_place(const Sim *s, const u64 *m, int c) {
    for (i64 r = s->tlo[c]; r < s->tlo[c + 1]; r++)
        if (row_free(s, m, r)) return r;
    return -1;
}

static inline i64 place(const Sim *s, const u64 *m, int k) {
    return s->layout == L_BUDDY ? buddy_place(s, m, k) : s->layout == L_GRAY ? gray_place(s, m, k) : table_place(s, m, k);
}

static inline int log2_of(i64 size) { return __builtin_ctzll((u64)size); }

/* a job's window class: its window's dimension (2**k positions), or on a table its volume's class */
static inline int win_class(const Sim *s, i64 j) { return s->layout == L_TABLE ? (int)s->jcls[j] : log2_of(s->size[j]); }

/* a window set (on) or cleared in mask m: `len` positions from p, or on a table row p's mask */
static inline void win_mark(const Sim *s, u64 *m, i64 p, i64 len, int on) {
    if (s->layout != L_TABLE) { mark(s, m, p, len, on); return; }
    const u64 *w = s->tab + (size_t)p * (size_t)s->words;
    i32 a = s->tspan[2 * p], e = s->tspan[2 * p + 1];
    if (on) for (i32 i = a; i <= e; i++) m[i] |= w[i];
    else for (i32 i = a; i <= e; i++) m[i] &= ~w[i];
}

/* ------------------------------------------------- the free list (layout 3) */

/* FreeListAllocator (alloc/hypercube/allocators.py) with complete recognition while no mesh is live
 * and nothing is on the auxiliary lists (its _mask_exact: so also the AFL when every mesh fills its
 * cube): its free lists, split, merge and recognition, the same operations in the same order.  A cube
 * is (free, value) (the free bits vary, the others are value's), kept as the key free << dim | value;
 * a job's position is its cube's key.  The lists are sets (a list yields its least (value, free)
 * cube); each is kept in that order (Lists), so a record of them compares and copies as bytes.  A
 * merge's mate is looked for in its list, and the cubes a recognised one is carved out of among all
 * the listed cubes (few: they are disjoint free cubes). */

static inline i64 cube_key(const Sim *s, u64 f, u64 v) { return (i64)((f << s->dim) | v); }

/* the set bits of x (without the popcnt instruction the build does not ask for, the builtin is a call) */
static inline i64 popc(u64 x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (i64)((x * 0x0101010101010101ULL) >> 56);
}
static inline u64 key_free(const Sim *s, i64 key) { return (u64)key >> s->dim; }

/* the set bits of a cube's free bits (fewer than 16: the free list runs up to Q15), by a table of bytes: the
 * list operations ask it on every add, drop and merge, where popc's arithmetic was a tenth of a conservative
 * run of the free list on Q7 */
#define POP2(n) n, n + 1, n + 1, n + 2
#define POP4(n) POP2(n), POP2(n + 1), POP2(n + 1), POP2(n + 2)
#define POP6(n) POP4(n), POP4(n + 1), POP4(n + 1), POP4(n + 2)
static const unsigned char POP8[256] = {POP6(0), POP6(1), POP6(1), POP6(2)};
static inline int popc_free(u64 f) { return POP8[f & 255] + POP8[(f >> 8) & 255]; }
static inline u64 key_value(const Sim *s, i64 key) { return (u64)key & (((u64)1 << s->dim) - 1); }

/* a record of lists: the count held, the lists' starts (dim + 2) and room for a key per node (the most
 * disjoint cubes there can be); its size in bytes */
static i64 lists_bytes(const Sim *s) {
    return ((i64)sizeof(i64) + (s->dim + 2 + s->nodes) * (i64)sizeof(i32) + 7) / 8 * 8;
}

static inline void lists_view(const Sim *s, char *rec, Lists *L) {
    L->held = (i64 *)rec;
    L->at = (i32 *)(rec + sizeof(i64));
    L->key = L->at + s->dim + 2;
}

/* the bytes of a record in use (the count held, the starts, the listed keys) */
static inline size_t lists_used(const Sim *s, const Lists *L) {
    return sizeof(i64) + (size_t)(s->dim + 2 + L->at[s->dim + 1]) * sizeof(i32);
}

/* whether two records hold the same lists and count as many held */
static inline int lists_same(const Sim *s, const Lists *x, const Lists *y) {
    size_t n = lists_used(s, x);
    return n == lists_used(s, y) && !memcmp(x->held, y->held, n);
}

/* a cube's place in its list's order: by value, then by free bits */
static inline u64 fl_order(const Sim *s, i64 key) { return key_value(s, key) << s->dim | key_free(s, key); }

static void fl_add(const Sim *s, Lists *L, u64 f, u64 v) {
    int d = popc_free(f), D = s->dim;
    i32 key = (i32)cube_key(s, f, v);
    u64 o = fl_order(s, key);
    i32 *at = L->at, *keys = L->key;
    i32 i = at[d], end = at[d + 1], n = at[D + 1];
    while (i < end && fl_order(s, keys[i]) < o) i++;
    memmove(&keys[i + 1], &keys[i], (size_t)(n - i) * sizeof(i32));
    keys[i] = key;
    for (int e = d + 1; e <= D + 1; e++) at[e]++; /* (D and at in locals: a store to at[e] may not change them) */
}

/* where a listed cube of d free bits is in the lists, or -1 */
static inline i32 fl_find(const Lists *L, int d, i32 key) {
    for (i32 i = L->at[d], end = L->at[d + 1]; i < end; i++)
        if (L->key[i] == key) return i;
    return -1;
}

static void fl_drop(const Sim *s, Lists *L, int d, i32 i) {
    int D = s->dim;
    i32 *at = L->at;
    memmove(&L->key[i], &L->key[i + 1], (size_t)(at[D + 1] - i - 1) * sizeof(i32));
    for (int e = d + 1; e <= D + 1; e++) at[e]--;
}

static void fl_del(const Sim *s, Lists *L, i32 key) {
    int d = popc_free(key_free(s, key));
    fl_drop(s, L, d, fl_find(L, d, key));
}

/* the fresh state: the whole machine, one free cube (FreeListAllocator._reset_lists) */
static void fl_reset(const Sim *s, Lists *L) {
    for (int d = 0; d <= s->dim + 1; d++) L->at[d] = 0;
    fl_add(s, L, (u64)s->nodes - 1, 0);
}

/* the least (value, free) cube of the lowest nonempty list of dimension >= k, or -1 (its list in *at) */
static i64 fl_least(const Sim *s, const Lists *L, int k, int *at) {
    int i = k;
    while (i <= s->dim && L->at[i] == L->at[i + 1]) i++;
    if (i > s->dim) return -1;
    *at = i;
    return L->key[L->at[i]];
}

/* bit i (0 <= i < 64) set iff bit p of i is 0 (p < 6) */
static const u64 BIT0[6] = {0x5555555555555555ULL, 0x3333333333333333ULL, 0x0F0F0F0F0F0F0F0FULL,
                            0x00FF00FF00FF00FFULL, 0x0000FFFF0000FFFFULL, 0x00000000FFFFFFFFULL};

/* Depth first over the free masks F of `depth` bits, each bit above the last (so in the order of
 * combinations): level `depth` of s->g holds the base values of F's free subcubes (bit v set iff
 * the cube (F, v) is free; v has F's bits clear).  Adding bit p keeps a base v iff v and v | 2**p
 * both were bases.  No base for F: none for any F' containing it, so that branch ends; nor when F | p
 * keeps fewer than the 2**(k - depth - 1) bases a free k-cube over it would leave.  The first k-bit F
 * with a base, and its lowest base, as a key; -1 if none.
 *
 * Bases thin out fast as F grows, so each level lists its words that are not 0 (s->gw, s->gn) and is 0
 * everywhere else: a level is built, read and cleared through its list alone.  (A failing search on Q15
 * visits hundreds of levels of 512 words, most of them 0: a burst of 400 jobs on Q15 under conservative
 * took 28 s, 5.5 s so.) */
static i64 subcube_search(const Sim *s, int depth, int k, int from, u64 F) {
    i64 W = s->words;
    const u64 *G = s->g + (size_t)depth * (size_t)W;
    const i32 *GW = s->gw + (size_t)depth * (size_t)W;
    i64 GN = s->gn[depth];
    if (depth == k) /* the lowest base: the list ascends */
        return GN ? cube_key(s, F, (u64)(GW[0] * 64 + __builtin_ctzll(G[GW[0]]))) : -1;
    u64 *H = s->g + (size_t)(depth + 1) * (size_t)W;
    i32 *HW = s->gw + (size_t)(depth + 1) * (size_t)W;
    i64 need = (i64)1 << (k - depth - 1);
    i64 c = -1;
    for (int p = from; p <= s->dim - (k - depth) && c < 0; p++) {
        i64 hn = 0, have = 0;
        if (p < 6) {
            int sh = 1 << p;
            for (i64 j = 0; j < GN; j++) {
                i32 w = GW[j];
                u64 x = G[w] & (G[w] >> sh) & BIT0[p];
                if (x) { H[w] = x; HW[hn++] = w; have += popc(x); }
            }
        } else {
            i32 st = (i32)1 << (p - 6);
            for (i64 j = 0; j < GN; j++) {
                i32 w = GW[j];
                if (w & st) continue;
                u64 x = G[w] & G[w + st];
                if (x) { H[w] = x; HW[hn++] = w; have += popc(x); }
            }
        }
        s->gn[depth + 1] = hn;
        if (have >= need) c = subcube_search(s, depth + 1, k, p + 1, F | ((u64)1 << p));
        for (i64 j = 0; j < hn; j++) H[HW[j]] = 0;
    }
    return c;
}

/* complete recognition (_recognisable): the first free k-subcube of mask m, free masks in the order of
 * combinations(range(dim), k) and then by value (_all_subcubes); its key, or -1 */
static i64 recognise_now(const Sim *s, const u64 *m, int k) {
    i64 have = 0, n = 0;
    for (i64 w = 0; w < s->words; w++) {
        u64 x = s->g[w] = free_word(s, m, w);
        if (x) { s->gw[n++] = (i32)w; have += popc(x); }
    }
    s->gn[0] = n;
    if (have < ((i64)1 << k)) return -1;
    return subcube_search(s, 0, k, 0, 0);
}

/* On a large cube the search costs tenths of a millisecond (2**dim / 64 words a mask it visits), and conservative
 * backfilling asks it of the same states again and again (the plan's kept states, and trials that replay the
 * same events onto them).  The answer is a function of the mask and k, so it is remembered: a slot per hash of
 * (mask, k), holding the whole mask, compared before an answer is taken from it.  From Q5 up it pays (CTC-SP2's
 * whole log on Q9 under conservative: 0.79 of the time; SDSC-SP2's on Q7: 0.95; LLNL-Atlas's on Q14: 0.15). */
#define RC_MIN_DIM 5
#define RC_SLOTS 4096
typedef struct RecMemo { u64 h; i64 key; int k, used; } RecMemo;

/* four lanes, each word multiplied into its own, so the multiplies do not wait on one another: one chain over
 * the 512 words of a Q15 mask was most of recognisable's time (a burst of 400 jobs on Q15 under conservative,
 * one run each: 6.1 s to 5.2 s) */
static inline u64 mask_hash(const u64 *m, i64 W, int k) {
    const u64 C = 0xFF51AFD7ED558CCDULL;
    u64 h[4] = {0x9E3779B97F4A7C15ULL ^ (u64)k, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL, 0x27D4EB2F165667C5ULL};
    i64 w = 0;
    for (; w + 4 <= W; w += 4)
        for (int j = 0; j < 4; j++) {
            h[j] = (h[j] ^ m[w + j]) * C;
            h[j] ^= h[j] >> 32;
        }
    for (; w < W; w++) {
        h[0] = (h[0] ^ m[w]) * C;
        h[0] ^= h[0] >> 32;
    }
    u64 x = h[0];
    for (int j = 1; j < 4; j++) x = (x ^ (x >> 32) ^ h[j]) * C;
    return x ^ (x >> 29);
}

static i64 recognisable(const Sim *s, const u64 *m, int k) {
    if (!s->rc) return recognise_now(s, m, k);
    i64 W = s->words;
    u64 h = mask_hash(m, W, k);
    size_t slot = (size_t)(h & (RC_SLOTS - 1));
    RecMemo *e = &s->rc[slot];
    u64 *em = s->rcmask + slot * (size_t)W;
    if (e->used && e->h == h && e->k == k && !memcmp(em, m, (size_t)W * sizeof(u64))) return e->key;
    i64 key = recognise_now(s, m, k);
    *e = (RecMemo){h, key, k, 1};
    memcpy(em, m, (size_t)W * sizeof(u64));
    return key;
}

/* carve a recognised cube out of the listed cubes it meets (_recognise, with _difference) */
static void fl_carve(const Sim *s, Lists *L, i64 key) {
    u64 bf = key_free(s, key), bv = key_value(s, key);
    i32 *meet = s->carve, n = 0; /* the listed cubes it meets: those agreeing with it on the bits fixed in both */
    for (i32 i = 0; i < L->at[s->dim + 1]; i++) {
        i32 o = L->key[i];
        if (!((key_value(s, o) ^ bv) & ~(key_free(s, o) | bf))) meet[n++] = o;
    }
    for (i32 x = 0; x < n; x++) { /* each replaced by its pieces outside the recognised cube */
        i32 o = meet[x];
        u64 cf = key_free(s, o), cv = key_value(s, o);
        fl_del(s, L, o);
        u64 inv = cv | bv, split = cf & ~(cf & bf), f = cf, v = cv;
        while (split) {
            u64 p = split & -split;
            split ^= p;
            f ^= p;
            fl_add(s, L, f, v | ((inv & p) ^ p));
            v |= inv & p;
        }
    }
}

/* the cube FreeListAllocator._allocate would give a k-cube request now, without taking it (-1: none) */
static i64 fl_peek(const Sim *s, int k) {
    if (k > s->dim || ((i64)1 << k) > s->free) return -1;
    int i;
    i64 c = fl_least(s, &s->L, k, &i);
    if (c < 0) return s->recognise ? recognisable(s, s->busy, k) : -1;
    u64 f = key_free(s, c);
    for (; i > k; i--) f ^= (u64)1 << (63 - __builtin_clzll(f)); /* split at the highest free bit, keep the 0 half */
    return cube_key(s, f, key_value(s, c));
}

/* _allocate on lists L and busy mask m: the least listed cube of the lowest dimension >= k, split down
 * to k (_take_list), else complete recognition (s->recognise; the lists only: none); -1: none.  (_allocate first refuses a cube wider than
 * the free nodes: then no listed cube is that wide and recognition finds none, so the answer is the same
 * without that test, which fl_alloc makes for speed.) */
static i64 fl_alloc_on(const Sim *s, Lists *L, const u64 *m, int k) {
    int i;
    i64 c = fl_least(s, L, k, &i);
    if (c < 0) {
        if (!s->recognise) return -1;
        c = recognisable(s, m, k);
        if (c >= 0) fl_carve(s, L, c);
        return c;
    }
    fl_del(s, L, (i32)c);
    u64 f = key_free(s, c), v = key_value(s, c);
    for (; i > k; i--) {
        u64 b = (u64)1 << (63 - __builtin_clzll(f));
        f ^= b;
        fl_add(s, L, f, v | b);
    }
    return cube_key(s, f, v);
}

/* _allocate now */
static i64 fl_alloc(Sim *s, int k) {
    if (k > s->dim || ((i64)1 << k) > s->free) return -1;
    return fl_alloc_on(s, &s->L, s->busy, k);
}

/* _release on lists L, the allocation already out of those held (none held: `empty`): the fresh state if
 * nothing is held, else free-list deallocation (_merge_into_fl: merge with a listed complementary cube,
 * lowest bit first, repeatedly) */
static void fl_release_on(const Sim *s, Lists *L, i64 key, int empty) {
    if (empty) { fl_reset(s, L); return; }
    u64 f = key_free(s, key), v = key_value(s, key);
    for (int d = popc_free(f);; d++) {
        /* the mates: listed cubes with the same free bits whose value differs in one bit; the lowest bit's */
        i32 at = -1;
        u64 low = 0;
        for (i32 i = L->at[d], end = L->at[d + 1]; i < end; i++) {
            i64 o = L->key[i];
            u64 x = key_value(s, o) ^ v;
            if (key_free(s, o) == f && x && !(x & (x - 1)) && (!low || x < low)) { low = x; at = i; }
        }
        if (at < 0) break;
        fl_drop(s, L, d, at);
        f |= low;
        v &= ~low;
    }
    fl_add(s, L, f, v);
}

/* _release now, once the job left the running jobs */
static inline void fl_release(Sim *s, i64 key) { fl_release_on(s, &s->L, key, !s->running.n); }

/* the window the allocator gives 2**k positions now (the free list: from its lists), or -1 */
static inline i64 alloc_now(Sim *s, i64 j) {
    int k = win_class(s, j);
    if (s->size[j] > s->free) return -1;
    return s->layout == L_FREE ? fl_alloc(s, k) : place(s, s->busy, k);
}

/* SUBSETS[f] (f < 64): bit p set iff p's bits are among f's, the positions of the cube (f, 0) within a word
 * (filled when the module loads) */
static u64 SUBSETS[64];

static void subsets_fill(void) {
    for (u64 f = 0; f < 64; f++) {
        u64 pat = 1;
        for (u64 b = f; b; b &= b - 1) pat |= pat << (1 << __builtin_ctzll(b)); /* each free bit doubles the pattern */
        SUBSETS[f] = pat;
    }
}

/* set (on) or clear a cube's nodes: within a word, the cube (f, v) is (f, 0) moved to v's low bits (they are
 * clear in f, so adding them is or-ing them); across words, every word whose high bits are v's with f's free */
static void mark_cube(const Sim *s, u64 *m, i64 key, int on) {
    u64 f = key_free(s, key), v = key_value(s, key);
    u64 pat = SUBSETS[f & 63] << (v & 63), sub = 0;
    u64 fh = f >> 6, vh = v >> 6;
    do {
        u64 w = vh | sub;
        if (on) m[w] |= pat; else m[w] &= ~pat;
        sub = (sub - fh) & fh;
    } while (sub);
}

/* a job's window (a cube on the free list) set or cleared in mask m */
static inline void mark_job(const Sim *s, u64 *m, i64 j, int on) {
    if (s->layout == L_FREE) mark_cube(s, m, s->pos[j], on);
    else win_mark(s, m, s->pos[j], s->size[j], on);
}

/* whether a window of 2**k positions fits mask m (the free list: a free k-subcube, which it recognises; not
 * asked on layout 5, whose lists alone say, and which EASY does not run on) */
static inline int fits_mask(const Sim *s, const u64 *m, int k) {
    return s->layout == L_FREE ? recognisable(s, m, k) >= 0 : place(s, m, k) >= 0;
}

/* the least estimate among the queued jobs of class k in word wi (64 ranks) of cls[k] */
static inline double *mest_at(const Sim *s, int k, i64 wi) { return &s->mest[(size_t)k * (size_t)s->mwords + (size_t)wi]; }

/* a queued job of rank r and window class k (its estimate est) in EASY's sets of ranks by class, and the least
 * estimate of its word there */
static inline void cls_add(Sim *s, int k, i64 r, double est) {
    bs_set(&s->cls[k], r);
    double *m = mest_at(s, k, r >> 6);
    if (est < *m) *m = est;
}

/* the job of rank r and class k out of them: its word's least estimate found again among those left */
static void cls_drop(Sim *s, int k, i64 r) {
    bs_clear(&s->cls[k], r);
    i64 wi = r >> 6;
    double m = INFINITY;
    for (u64 w = s->cls[k].bits[0][wi]; w; w &= w - 1) {
        double e = s->est[q_job(&s->q, (wi << 6) + __builtin_ctzll(w))];
        if (e < m) m = e;
    }
    *mest_at(s, k, wi) = m;
}

/* EASY's walk on a layout: word wi of the ranks it visits.  Classes in `open` and not in `half` are visited
 * whole; a class in `half` (its jobs that would not end by the shadow time refused, those that would still
 * open) only in a word holding a job that ends by it (estimate <= latest_end): a word of long jobs alone is
 * passed over at once, rather than each of its jobs visited to be refused.  (On SDSC-BLUE's whole log on Q10
 * under EASY, 11.1 M of the walk's 11.9 M visits were such refusals.) */
static inline u64 walk_word(const Sim *s, u64 open, u64 half, double latest_end, i64 wi) {
    u64 w = bs_word(s->cls, open & ~half, 0, wi);
    for (u64 a = half; a; a &= a - 1) {
        int k = __builtin_ctzll(a);
        if (*mest_at(s, k, wi) <= latest_end) w |= s->cls[k].bits[0][wi];
    }
    return w;
}

static int start_job_at(Sim *s, i64 j, i64 p) {
    i64 sz = s->size[j];
    s->plan_same = 0;
    if (s->layout) {
        s->pos[j] = p;
        mark_job(s, s->busy, j, 1);
    }
    q_remove(&s->q, j);
    if (s->cls) cls_drop(s, log2_of(sz), q_rank(&s->q, j));
    fw_add(&s->waiting, sz, -1);
    s->free -= sz;
    s->serial++;
    if (run_insert(&s->running, s->now + s->est[j], s->serial, j, sz) < 0) return -1;
    s->start[j] = s->now;
    if (s->log) s->log[s->nlog++] = j;
    double e = s->end[j] = s->now + s->run[j];
    s->seq++;
    return heap_push(&s->heap, e, s->seq, j);
}

static inline int start_job(Sim *s, i64 j) { return start_job_at(s, j, -1); }

/* heads start, strictly in order, while they fit (FCFS, and the start of an EASY pass) */
static int start_heads(Sim *s) {
    if (s->layout) {
        while (s->q.head >= 0 && s->size[s->q.head] <= s->free) {
            i64 p = alloc_now(s, s->q.head);
            if (p < 0) break;
            if (start_job_at(s, s->q.head, p) < 0) return -1;
        }
        return 0;
    }
    while (s->q.head >= 0 && s->size[s->q.head] <= s->free)
        if (start_job(s, s->q.head) < 0) return -1;
    return 0;
}

/* the window sizes 2**k no wider than `free` (> 0) positions, as a mask over k */
static inline u64 sizes_within(i64 free) { return low_bits(64 - __builtin_clzll((u64)free)); }

/* the running jobs from..to-1 (by expected end) released in mask m (*avail: the free positions, counted
 * on): whether the head, a cube of 2**kh = need positions, then has a free cube */
static int fl_release_until(Sim *s, u64 *m, i64 from, i64 to, i64 *avail, i64 need, int kh) {
    int big = 0;
    for (i64 x = from; x < to; x++) {
        i64 j = s->running.a[x].job;
        mark_job(s, m, j, 0);
        *avail += s->size[j];
        big |= s->size[j] >= need; /* a window as large as the head's holds one of the head's */
    }
    return *avail >= need && (big || fits_mask(s, m, kh));
}

/* the least k >= 1 such that the head (a cube of 2**kh = need nodes) has a free cube once the first k
 * running jobs (by expected end) are released, with s->sh left at that mask; 0: not even after all.
 * (_SubcubeBase.earliest_fit asks after each release.)  Having a free cube only grows with the
 * releases, so the answer is found by galloping and then bisection, with fewer recognitions than
 * one per release; s->sh holds busy on entry. */
static i64 fl_first_fit(Sim *s, i64 need, int kh) {
    const Running *r = &s->running;
    size_t bytes = (size_t)s->words * sizeof(u64);
    u64 *lo_m = s->trial, *hi_m = s->sh, *mid_m = s->sh2; /* the masks after lo, hi and mid releases */
    i64 lo = 0, avail = s->free, step = 1, hi = -1;
    while (lo < r->n) { /* lo releases: no free cube (or lo = 0) */
        i64 end = lo + step < r->n ? lo + step : r->n, av = avail;
        memcpy(lo_m, hi_m, bytes);
        if (fl_release_until(s, hi_m, lo, end, &av, need, kh)) { hi = end; break; }
        lo = end;
        avail = av;
        step *= 2;
    }
    if (hi < 0) return 0;
    while (hi - lo > 1) { /* a free cube after hi releases, none after lo (or lo = 0) */
        i64 mid = lo + (hi - lo) / 2, av = avail;
        memcpy(mid_m, lo_m, bytes);
        u64 *tmp;
        if (fl_release_until(s, mid_m, lo, mid, &av, need, kh)) { hi = mid; tmp = hi_m; hi_m = mid_m; mid_m = tmp; }
        else { lo = mid; avail = av; tmp = lo_m; lo_m = mid_m; mid_m = tmp; }
    }
    if (hi_m != s->sh) memcpy(s->sh, hi_m, bytes);
    return hi;
}

/* a backfill candidate the guard refuses on the free list: EASY allocates it, then releases it, and that
 * may rearrange the lists (a merge with another mate than the split's); so do the same, and say whether
 * the lists are what they were (1), or not (0: the candidate is kept for the replay of the log, `tried`,
 * which repeats it); -1: no memory */
static int fl_trial(Sim *s, i64 j, int k) {
    Lists before;
    lists_view(s, s->snap, &before);
    memcpy(before.held, s->L.held, lists_used(s, &s->L));
    i64 c = fl_alloc(s, k);
    fl_release(s, c);
    if (lists_same(s, &before, &s->L)) return 1;
    if (s->log) {
        if (grow((void **)&s->tried, &s->cap_tried, s->ntried + 2, sizeof(i64)) < 0) return -1;
        s->tried[s->ntried++] = s->nlog;
        s->tried[s->ntried++] = j;
    }
    return 0;
}

/* EASY's pass on a layout (EASY._backfill_guarded, and _backfill_indexed which makes the same
 * decisions, with _MaskGuard; on the free list _FreeSubcubeGuard): the shadow time is the
 * first release after which the head has a window, every running job expected to end then
 * counting as ended; a candidate that fits now starts if it ends by the shadow time, or if
 * the head still has a window in the shadow mask with the candidate's window added.  A
 * refusal depends only on the masks, the window size and whether the job ends by the
 * shadow, so it is remembered under those until a job starts.  On the free list the window
 * a candidate gets depends on the lists too: a refusal by the guard stands while the refused
 * candidate's allocate-and-release leaves the lists as they were, and is forgotten once one
 * changes them (fl_trial); a refusal for want of any window (a function of the mask) stands. */
static int easy_pass_mask(Sim *s) {
    Queue *q = &s->q;
    if (start_heads(s) < 0) return -1;
    if (q->head < 0) return 0;
    i64 head = q->head, need = s->size[head];
    int kh = log2_of(need);
    i64 room = fw_at_most(&s->waiting, s->free) - (need <= s->free);
    if (!room) return 0;
    Running *r = &s->running;
    size_t bytes = (size_t)s->words * sizeof(u64);
    memcpy(s->sh, s->busy, bytes);
    i64 avail = s->free, k = 0;
    int fits = 0;
    if (s->layout == L_FREE) {
        k = fl_first_fit(s, need, kh);
        fits = k > 0;
    }
    while (s->layout != L_FREE && k < r->n && !fits) {
        i64 j = r->a[k++].job;
        mark_job(s, s->sh, j, 0);
        avail += s->size[j];
        /* a window as large as the head's holds one of the head's (every layout's windows nest) */
        fits = avail >= need && (s->size[j] >= need || fits_mask(s, s->sh, kh));
    }
    if (!fits) { s->err_job = head; return ST_HEAD_NEVER_FITS; }
    double t = expected_end(r->a[k - 1].ee, s->now);
    for (; k < r->n && expected_end(r->a[k].ee, s->now) <= t; k++) {
        i64 j = r->a[k].job;
        mark_job(s, s->sh, j, 0);
    }
    s->head = head;
    s->shadow = t;
    double latest_end = latest_end_by(t, s->now);
    unsigned char refused[128];
    memset(refused, 0, sizeof refused);
    /* The candidates, in queue order, are the jobs after the head whose window size is not
     * refused for their kind; a job wider than the free positions, or of a size refused for both
     * kinds, would only be passed over, so the walk follows the union of the window sizes still
     * open (`open`: no wider than the free positions, not refused for both kinds) and visits
     * nothing else. */
    u64 open = sizes_within(s->free);
    /* `half`: the sizes in `open` refused for the jobs that would not end by the shadow time only (see walk_word) */
    u64 half = 0;
    /* the walk reads the union a word (64 ranks) at a time: `word` holds the ranks after rk in
     * word `wi` of it, read again whenever `open` or `half` changes */
    i64 rk = q_rank(q, head), wi = -1;
    u64 word = 0;
    for (;;) {
        while (!word) {
            rk = bs_next_any(s->cls, open, wi < 0 ? rk : (wi << 6) + 63);
            if (rk < 0) break;
            wi = rk >> 6;
            word = walk_word(s, open, half, latest_end, wi) & (~0ULL << (rk & 63));
        }
        if (rk < 0) break;
        rk = (wi << 6) + __builtin_ctzll(word);
        word &= word - 1;
        i64 j = q_job(q, rk);
        i64 sz = s->size[j];
        int kj = log2_of(sz), ends_by = s->est[j] <= latest_end;
        int code = 2 * kj + ends_by;
        if (refused[code]) continue;
        int fl = s->layout == L_FREE;
        i64 p = fl ? fl_peek(s, kj) : place(s, s->busy, kj);
        int ok = p >= 0, remember = 1;
        if (!ok) refused[2 * kj] = refused[2 * kj + 1] = 1; /* no window now: neither kind of job of this size fits */
        else if (!ends_by) {
            memcpy(s->trial, s->sh, bytes);
            if (fl) mark_cube(s, s->trial, p, 1); else mark(s, s->trial, p, sz, 1);
            ok = fits_mask(s, s->trial, kh);
            if (ok) {
                if (fl) mark_cube(s, s->sh, p, 1); else mark(s, s->sh, p, sz, 1);
            } else if (fl && (remember = fl_trial(s, j, kj)) < 0) return -1;
        }
        if (ok && fl && fl_alloc(s, kj) != p) { s->err_job = j; return ST_LISTS_BROKEN; }
        if (!ok) {
            if (!remember) {
                /* the refused candidate's allocate-and-release changed the lists: the refusals made by
                 * the guard in the old lists are forgotten (those for want of a window stand), and the
                 * sizes so refused are walked whole again from here */
                for (int c = 0; c < 2 * (s->dim + 1); c += 2)
                    if (!refused[c + 1]) refused[c] = 0;
                if (half) {
                    half = 0;
                    word = (rk & 63) == 63 ? 0 : walk_word(s, open, half, latest_end, wi) & (~0ULL << ((rk & 63) + 1));
                }
                continue;
            }
            refused[code] = 1;
            if (refused[2 * kj] && refused[2 * kj + 1]) {
                open &= ~(1ULL << kj);
                half &= ~(1ULL << kj);
                word &= walk_word(s, open, half, latest_end, wi);
            } else if (refused[2 * kj]) { /* (a job that ends by the shadow time is refused only with no window) */
                half |= 1ULL << kj;
                word &= walk_word(s, open, half, latest_end, wi);
            }
        } else {
            if (start_job_at(s, j, p) < 0) return -1;
            if (!s->free) break;
            memset(refused, 0, sizeof refused);
            open = sizes_within(s->free);
            half = 0;
            word = (rk & 63) == 63 ? 0 : walk_word(s, open, half, latest_end, wi) & (~0ULL << ((rk & 63) + 1));
        }
    }
    return 0;
}

/* EASY._backfill_counting over candidates from `first` (following the queue, at most
 * `count` of them that are no wider than the free processors at the start; -1: no bound)
 * or, with `last` >= 0, the arrivals first..last-1. */
static int easy_backfill(Sim *s, i64 first, i64 room, i64 last) {
    if (!s->free) return 0;
    double latest_end = latest_end_by(s->shadow, s->now); /* a job ends by the shadow iff its estimate <= this */
    i64 limit = s->free;
    for (i64 j = first; j >= 0 && (last < 0 || j < last);) {
        i64 nx = last < 0 ? s->q.next[j] : j + 1;
        i64 sz = s->size[j];
        if (sz <= s->free) {
            int ok = 1;
            if (s->est[j] > latest_end) {
                if (sz > s->extra) ok = 0;
                else s->extra -= sz;
            }
            if (ok) {
                if (start_job(s, j) < 0) return -1;
                if (!s->free) break;
            }
        }
        /* once every queued job no wider than `limit` was seen, the rest are too wide */
        if (room >= 0 && sz <= limit && --room == 0) break;
        j = nx;
    }
    return 0;
}

static int easy_pass(Sim *s, i64 arrived_first, i64 arrived_last) {
    Queue *q = &s->q;
    if (s->layout) return easy_pass_mask(s);
    if (s->incremental && s->reserved && !s->released && q->head >= 0 && s->now < s->shadow && q->head == s->head)
        return easy_backfill(s, arrived_first, -1, arrived_last); /* EASY._backfill_arrivals */
    if (start_heads(s) < 0) return -1;
    s->reserved = 0;
    if (q->head < 0) return 0;
    i64 head = q->head;
    i64 need = s->size[head];
    /* the head does not fit, so it is not counted among those no wider than free */
    i64 room = fw_at_most(&s->waiting, s->free);
    if (!room) return 0;
    /* the shadow time: running jobs by expected end until the head fits (counting_earliest_fit) */
    Running *r = &s->running;
    i64 avail = s->free, k = 0;
    while (k < r->n && avail < need) avail += r->a[k++].size;
    if (avail < need) { s->err_job = head; return ST_HEAD_NEVER_FITS; }
    double t = expected_end(r->a[k - 1].ee, s->now);
    while (k < r->n && expected_end(r->a[k].ee, s->now) <= t) avail += r->a[k++].size;
    s->head = head;
    s->shadow = t;
    s->extra = avail - need;
    s->reserved = 1;
    return easy_backfill(s, q->next[head], room, -1);
}

/* the free processors may have grown on [a, c) since the last pass */
static inline void grew(Sim *s, double a, double c) {
    if (a < s->grown) s->grown = a;
    if (c > s->grown_end) s->grown_end = c;
}

/* Where the free processors may have grown since each queued job's earliest start was last found
 * (see conservative_pass; the mask pass uses it alike): from `grown` to `grown_end` between the last
 * pass and this one, and in this pass before the job; and through the last pass's moves of the jobs
 * after it (pmv: those moves in queue order, as suffix extremes from `km` on). */
typedef struct { double grown, grown_end; i64 km; } Growth;

static Growth growth_begin(Sim *s) {
    Growth g = {s->grown, s->grown_end, 0};
    s->grown = INFINITY;
    s->grown_end = -INFINITY;
    { Mv *x = s->pmv; s->pmv = s->mv; s->mv = x; i64 c = s->cap_pmv; s->cap_pmv = s->cap_mv; s->cap_mv = c; }
    s->npmv = s->nmv;
    s->nmv = 0;
    for (i64 k = s->npmv - 2; k >= 0; k--) {
        if (s->pmv[k + 1].a < s->pmv[k].a) s->pmv[k].a = s->pmv[k + 1].a;
        if (s->pmv[k + 1].c > s->pmv[k].c) s->pmv[k].c = s->pmv[k + 1].c;
    }
    return g;
}

/* where it may have grown for the job of queue rank r (asked in queue order): a to c (a = +inf: nowhere) */
static inline void growth_for(const Sim *s, Growth *g, i64 r, double *a, double *c) {
    while (g->km < s->npmv && s->pmv[g->km].rank <= r) g->km++;
    *a = g->grown;
    *c = g->grown_end;
    if (g->km < s->npmv) {
        if (s->pmv[g->km].a < *a) *a = s->pmv[g->km].a;
        if (s->pmv[g->km].c > *c) *c = s->pmv[g->km].c;
    }
}

/* the job of rank r moved away from [old, old_end): growth for the jobs after it now, and before it next pass */
static inline int growth_moved(Sim *s, Growth *g, i64 r, double old, double old_end) {
    if (grow((void **)&s->mv, &s->cap_mv, s->nmv + 1, sizeof(Mv)) < 0) return -1;
    s->mv[s->nmv++] = (Mv){r, old, old_end};
    if (old < g->grown) g->grown = old;
    if (old_end > g->grown_end) g->grown_end = old_end;
    return 0;
}

/* the first breakpoint whose span reaches past a (end_at(t, span) is monotone in t; usually the first: growth
 * most often starts now) */
static inline i64 steps_first_reaching(const Steps *p, double span, double a) {
    i64 lo = 0, hi = p->n;
    if (!(end_at(p->t[0], span) > a))
        while (lo < hi) {
            i64 mid = (lo + hi) / 2;
            if (end_at(p->t[mid], span) > a) hi = mid; else lo = mid + 1;
        }
    return lo;
}

/* a running job is past its expected end (released at the next instant: a time that depends on now) */
static inline int overrunning(const Sim *s) { return s->running.n > 0 && s->running.a[0].ee <= s->now; }

/* res.clear(): every reservation dropped (every job then looks from now on) */
static void drop_reservations(Sim *s) {
    for (i64 j = s->q.head; j >= 0; j = s->q.next[j]) s->res[j] = NAN;
    s->load.n = 0;
    s->live = 0;
    s->min_res = INFINITY;
}

static int cmp_event(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the reservations' load, built from the live reservations */
static int compact_load(Sim *s) {
    i64 m = 0;
    double *ev = malloc((size_t)(2 * s->live + 1) * 2 * sizeof(double));
    if (!ev) return -1;
    for (i64 j = s->q.head; j >= 0; j = s->q.next[j]) {
        double t = s->res[j];
        if (isnan(t)) continue;
        ev[2 * m] = t; ev[2 * m + 1] = (double)s->size[j]; m++;
        ev[2 * m] = end_at(t, span_of(s->est[j])); ev[2 * m + 1] = -(double)s->size[j]; m++;
    }
    qsort(ev, (size_t)m, 2 * sizeof(double), cmp_event);
    Steps *l = &s->load;
    l->n = 0;
    if (steps_reserve(l, m + 1) < 0) { free(ev); return -1; }
    i64 cur = 0;
    for (i64 e = 0; e < m;) {
        double t = ev[2 * e];
        while (e < m && ev[2 * e] == t) { cur += (i64)ev[2 * e + 1]; e++; }
        l->t[l->n] = t;
        l->v[l->n] = cur;
        l->n++;
    }
    free(ev);
    return 0;
}

/* a reservation whose time passed without a start (a job overran): the plan must be remade */
static int reservations_stale(const Sim *s) {
    for (i64 j = s->q.head; j >= 0; j = s->q.next[j])
        if (s->res[j] < s->now) return 1; /* NaN: no reservation, never < */
    return 0;
}

/* Conservative.schedule's wake-up: the next reservation, unless a job overruns (its end remakes the plan) */
static void wake_at_next_reservation(Sim *s) {
    if (overrunning(s)) return;
    double m = INFINITY;
    int any = 0;
    for (i64 j = s->q.head; j >= 0; j = s->q.next[j]) {
        double t = s->res[j];
        if (t > s->now && (!any || t < m)) { m = t; any = 1; } /* NaN: no reservation, never > */
    }
    if (any) s->wake = m;
}

/* the profile kept from the last pass, from `now` on: its segments before now dropped, and
 * the breakpoints where it does not change (moves and early ends leave some) merged away */
static void steps_advance(Steps *p, double now) {
    i64 i = steps_lower(p, now);
    i64 f = i < p->n && p->t[i] == now ? i : i - 1; /* the segment now is in (p->t[0] <= now) */
    i64 m = 0;
    for (i64 k = f; k < p->n; k++) {
        if (m > 0 && p->v[k] == p->v[m - 1]) continue;
        p->t[m] = p->t[k];
        p->v[m] = p->v[k];
        m++;
    }
    p->t[0] = now;
    p->n = m;
}

static int conservative_pass(Sim *s) {
    Queue *q = &s->q;
    s->wake = NAN;
    if (q->head < 0) return 0;
    double now = s->now;
    Steps *p = &s->prof;
    /* The profile at now is free processors now, plus the running jobs' releases at their
     * expected ends, minus the reservations' load.  After a pass with no running job past its
     * expected end, it is kept rather than rebuilt: from then until the next pass, a job's start
     * in a pass changes nothing (its reservation's span [now, now + estimate) is what it holds
     * until its expected end, now + estimate), a move or a dropped reservation is applied as it
     * is made, and a job that ends before its expected end frees its processors from then on
     * (simulate).  A job past its expected end (released at the next instant: a time that
     * depends on now), a stale reservation or the first pass rebuild it, as plan.CountingProfile
     * is built: then the load is built from the live reservations. */
    int overrun = overrunning(s);
    int stale = s->min_res < now; /* a reservation whose time passed without a start (a job overran) */
    if (stale) drop_reservations(s); /* remake them all */
    if (s->prof_kept && !overrun && !stale) steps_advance(p, now);
    else {
        if (compact_load(s) < 0) return -1;
        int ok = prof_build(p, now, s->free, &s->running, &s->load);
        if (ok < 0) return -1;
        if (!ok) {
            drop_reservations(s);
            if (prof_build(p, now, s->free, &s->running, &s->load) < 0) return -1;
        }
    }
    /* Compression: each job in queue order gives up its reservation and takes the earliest.
     * Its last earliest start `old` was found on a profile f'; it is still the earliest on
     * this one, f, wherever f <= f'.  f can only have grown where a reservation it held
     * moved away (a move in this pass before the job, or in the last pass after it), a job
     * ended before its expected end, or a zero-length job started (its reservation's span
     * is longer than the instant it is expected to end at): each from a time `a` on.  A
     * start b earlier than `old` was infeasible on f' and can become feasible only if its
     * span reaches past such an `a` and it starts before that growth ends (`c`); so the
     * candidates are the breakpoints from the first whose span reaches past the least `a`
     * to the greatest `c` (none: the job keeps `old`). */
    Growth gr = growth_begin(s);
    i64 nstart = 0;
    double min_res = INFINITY;
    for (i64 j = q->head; j >= 0; j = q->next[j]) {
        double old = s->res[j];
        int has = !isnan(old);
        if (has) {
            /* where it may have grown: since the last pass, in this pass before j, and through the
             * last pass's moves of the jobs after j */
            i64 r = q_rank(q, j);
            double a, c;
            growth_for(s, &gr, r, &a, &c);
            if (!(a < INFINITY)) goto kept;
            i64 sz = s->size[j];
            double span = span_of(s->est[j]);
            double old_end = end_at(old, span);
            double limit = c < old ? c : old;
            i64 lo = steps_first_reaching(p, span, a);
            if (lo >= p->n || !(p->t[lo] < limit)) goto kept;
            double t;
            if (with_sentinel(p) < 0) return -1;
            i64 at;
            if (prof_earliest(p, lo, limit, sz, span, 1, old, old_end, &t, &at)) { s->err_job = j; return ST_PROFILE_NEVER_FITS; }
            if (t == old) goto kept; /* given up and taken again: the same profile */
            s->changes++;
            /* t is the breakpoint at index `at`, and old > t: the breakpoints before `at` are < both */
            if (steps_add_from(p, old, old_end, sz, p->v[p->n - 1], at) < 0) return -1;
            if (steps_add_from(p, t, end_at(t, span), -sz, p->v[p->n - 1], at) < 0) return -1;
            if (growth_moved(s, &gr, r, old, old_end) < 0) return -1;
            s->res[j] = t;
        } else {
            i64 sz = s->size[j];
            double span = span_of(s->est[j]);
            double t;
            if (with_sentinel(p) < 0) return -1;
            i64 at;
            if (prof_earliest(p, 0, old, sz, span, 0, old, old, &t, &at)) { s->err_job = j; return ST_PROFILE_NEVER_FITS; }
            if (steps_add_from(p, t, end_at(t, span), -sz, p->v[p->n - 1], at) < 0) return -1;
            s->live++;
            s->changes++;
            s->res[j] = t;
        }
    kept:
        /* jobs whose reservation is now start now, in queue order (below); the others wait */
        if (s->res[j] <= now) s->starting[nstart++] = j;
        else if (s->res[j] < min_res) min_res = s->res[j];
    }
    s->min_res = min_res;
    for (i64 i = 0; i < nstart; i++) {
        i64 j = s->starting[i];
        double t = s->res[j];
        /* started, or (an allocator not monotone in free space) refused: no reservation either way */
        s->live--;
        s->res[j] = NAN;
        if (s->size[j] <= s->free) {
            if (start_job(s, j) < 0) return -1;
            /* its reservation held it to end_at(t, span); running, it is expected to end at now +
             * estimate, which is earlier where the estimate is zero (at the next instant: the profile is
             * rebuilt at the next pass, the job being past its expected end) or rounds to less than
             * two float steps of the clock (its processors come back to the kept profile from then) */
            double ee = now + s->est[j], end = end_at(t, span_of(s->est[j]));
            if (end != ee) {
                grew(s, t, end);
                if (ee > now && steps_add(p, ee, end, s->size[j], p->v[p->n - 1]) < 0) return -1;
            }
        } else { /* refused: its reservation is dropped */
            double end = end_at(t, span_of(s->est[j]));
            grew(s, t, end);
            if (steps_add(p, t, end, s->size[j], p->v[p->n - 1]) < 0) return -1;
        }
    }
    /* kept for the next pass unless a running job is past its expected end (a job started now
     * with a zero or rounded-away estimate is one) */
    s->prof_kept = !overrunning(s);
    /* Conservative.schedule's wake-up: the next reservation, unless a job overruns (its end remakes the plan) */
    if (s->prof_kept && min_res < INFINITY) s->wake = min_res;
    return 0;
}

/* ------------------------------------ conservative backfilling on a layout */
/* plan.ReplayPlan on busy masks.  The plan is its events in replay order (PEv) and the busy
 * mask before each of them (ST(s, i): a record of st by its slot, so that inserting events moves slots, not
 * masks): state 0 is the machine now, state i + 1 is state i with event i applied
 * (a release clears a window; an allocation places the reservation's window first fit, as the
 * allocator's _place does on that mask).  The plan is feasible iff every allocation finds a
 * window.  A job's earliest start, as ReplayPlan.earliest finds it: candidates are now and the
 * times of the plan's events (the job's own taken out), in order; the job must fit the state
 * before its allocation at t (the kept mask there: for a job being compressed, every candidate
 * before its old time comes before its own events, so the kept masks are those of the plan
 * without it), and then the rest of the plan must replay with the job in it (trial_mask).  The
 * old time itself needs no replay (see ReplayPlan.earliest).  A trial stops early, feasible, once
 * the job has ended in it (and, for a job being compressed, its old reservation has ended in the
 * plan) and every reservation still holding a window holds the one it holds in the plan: the
 * rest of the replay is then the plan's own, which is feasible.  Releases commute on a mask, so
 * only the order of allocations, and of releases before allocations at one instant, matters.
 * On the free list (layout 3) a state is the mask and the lists (a record each, lslot), and the
 * events keep ReplayPlan's whole order, since merges depend on the order of releases; a state is
 * the plan's own only if its lists are the same too (ls_same), for the same mask can come with
 * lists merged otherwise, where later allocations take other cubes. */

#define ST(s, i) ((s)->st + (size_t)(s)->mslot[i] * (size_t)(s)->swords)

/* whether event a comes before the key (t, kind, order, job) in ReplayPlan's order */
static inline int pev_before(const PEv *a, double t, int kind, i64 order, i64 job) {
    if (a->t != t) return a->t < t;
    if (a->kind != kind) return a->kind < kind;
    if (a->order != order) return a->order < order;
    return a->keyjob < job;
}

static int cmp_pev(const void *x, const void *y) {
    const PEv *a = x, *b = y;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    if (a->order != b->order) return a->order < b->order ? -1 : 1;
    return (a->keyjob > b->keyjob) - (a->keyjob < b->keyjob);
}

static int plan_reserve(Sim *s, i64 ne) {
    if (grow((void **)&s->ev, &s->cap_ev, ne, sizeof(PEv)) < 0) return -1;
    i64 cap_st = s->cap_st, cap_fit = s->cap_fit;
    if (grow((void **)&s->st, &cap_st, (ne + 1) * (s->swords ? s->swords : 1), sizeof(u64)) < 0) return -1;
    s->cap_st = cap_st;
    if (s->nmslot < ne + 1) { /* a record for each new state, each its own (the slots are a permutation of 0 .. nmslot-1) */
        if (grow((void **)&s->mslot, &s->cap_mslot, ne + 1, sizeof(i32)) < 0) return -1;
        while (s->nmslot < ne + 1) { s->mslot[s->nmslot] = (i32)s->nmslot; s->nmslot++; }
    }
    i64 c1 = cap_fit, c2 = cap_fit;
    if (grow((void **)&s->fit_known, &c1, ne + 1, sizeof(u64)) < 0 || grow((void **)&s->fit_yes, &c2, ne + 1, sizeof(u64)) < 0) return -1;
    s->cap_fit = c1 < c2 ? c1 : c2;
    if (s->layout == L_FREE && s->nslot < ne + 1) { /* a record for each new state, each its own */
        i64 rec = s->nslot + 2; /* records in use: the states' and the two scratch ones */
        if (grow((void **)&s->lsbuf, &s->cap_ls, rec + (ne + 1 - s->nslot), (size_t)s->recsize) < 0) return -1;
        if (grow((void **)&s->lslot, &s->cap_lslot, ne + 1, sizeof(i32)) < 0) return -1;
        if (!s->nslot) { s->ls_tmp = 0; s->ls_trial = 1; }
        while (s->nslot < ne + 1) s->lslot[s->nslot++] = (i32)rec++;
    }
    return 0;
}

/* the lists of record `slot` */
static inline Lists ls_at(const Sim *s, i32 slot) {
    Lists L;
    lists_view(s, s->lsbuf + (size_t)slot * (size_t)s->recsize, &L);
    return L;
}

static inline void ls_copy(const Sim *s, i32 to, i32 from) {
    Lists L = ls_at(s, from);
    memcpy(s->lsbuf + (size_t)to * (size_t)s->recsize, L.held, lists_used(s, &L));
}

static inline int ls_same(const Sim *s, i32 a, i32 b) {
    Lists x = ls_at(s, a), y = ls_at(s, b);
    return lists_same(s, &x, &y);
}

static void slots_reverse(i32 *a, i64 lo, i64 hi) {
    for (hi--; lo < hi; lo++, hi--) { i32 t = a[lo]; a[lo] = a[hi]; a[hi] = t; }
}

/* a[lo .. hi-1] rotated left by r (three reversals) */
static void slots_rotate(i32 *a, i64 lo, i64 r, i64 hi) {
    slots_reverse(a, lo, lo + r);
    slots_reverse(a, lo + r, hi);
    slots_reverse(a, lo, hi);
}

/* a window's release from a replay's state (mask m, lists L on the free list) */
static inline void st_release(const Sim *s, u64 *m, Lists *L, i64 p, i64 size) {
    if (s->layout == L_FREE) {
        if (s->swords) mark_cube(s, m, p, 0); /* (layout 5 keeps no masks: see swords) */
        (*L->held)--;
        fl_release_on(s, L, p, !*L->held);
    } else win_mark(s, m, p, size, 0);
}

/* an allocation of 2**k positions in a replay's state: its window, or -1 (nothing changed) */
static inline i64 st_alloc(const Sim *s, u64 *m, Lists *L, int k) {
    if (s->layout != L_FREE) {
        i64 p = place(s, m, k);
        if (p >= 0) win_mark(s, m, p, (i64)1 << k, 1);
        return p;
    }
    i64 p = fl_alloc_on(s, L, m, k);
    if (p >= 0) {
        if (s->swords) mark_cube(s, m, p, 1);
        (*L->held)++;
    }
    return p;
}

/* kept masks `count` states from state `from` to state `to`, with what is known of their windows, as a
 * memmove of the states would: the masks' slots (and on the free list the lists') rotate, O(1) a state
 * whatever the machine's size, so each record stays some state's; the states moved from and not moved
 * onto keep their masks and lists (a copy from where they went) */
static void st_move(Sim *s, i64 to, i64 from, i64 count) {
    memmove(&s->fit_known[to], &s->fit_known[from], (size_t)count * sizeof(u64));
    memmove(&s->fit_yes[to], &s->fit_yes[from], (size_t)count * sizeof(u64));
    if (to == from || !count) return;
    int fl = s->layout == L_FREE;
    i64 lo = to < from ? to : from, hi = (to < from ? from : to) + count, r = to < from ? from - to : hi - lo - (to - from);
    slots_rotate(s->mslot, lo, r, hi);
    if (fl) slots_rotate(s->lslot, lo, r, hi);
    i64 a = from, b = from + count; /* the states moved from, less those moved onto */
    if (to > from) b = to < b ? to : b;
    else a = to + count > a ? to + count : a;
    for (i64 i = a; i < b; i++) {
        memcpy(ST(s, i), ST(s, i + to - from), (size_t)s->swords * sizeof(u64));
        if (fl) ls_copy(s, s->lslot[i], s->lslot[i + to - from]);
    }
}

/* the kept masks from state `from` on (st[from] given): -1 if every allocation finds a window, else the
 * index of the first that does not.  Each event after index `hi` is the one the kept masks last had at
 * index i - d (d <= 0: the plan has lost events before them, as jobs ended): once one of them leaves
 * the mask it left before, with every reservation in the window it held before, the rest of the replay
 * is the same as before, so it stops there, and with d < 0 the rest of the masks move d places
 * (hi >= ne: no such event, a replay to the end). */
static i64 plan_replay(Sim *s, i64 from, i64 hi, i64 d) {
    size_t bytes = (size_t)s->swords * sizeof(u64);
    const PEv *ev = s->ev;
    i64 ne = s->ne;
    u64 *tmp = s->trial;
    i64 stamp = ++s->trials, displaced = 0; /* reservations holding another window than before (tstamp, disp) */
    int fl = s->layout == L_FREE;
    Lists L;
    s->st_valid = 0;
    for (i64 i = from; i < ne; i++) {
        const PEv *v = &ev[i];
        u64 *m = i > hi ? tmp : ST(s, i + 1);
        memcpy(m, ST(s, i), bytes);
        if (fl) {
            i32 to = i > hi ? s->ls_tmp : s->lslot[i + 1];
            ls_copy(s, to, s->lslot[i]);
            L = ls_at(s, to);
        }
        i64 w = v->who;
        if (v->kind == 0) {
            st_release(s, m, &L, v->res ? s->cp[w] : s->pos[w], s->size[w]);
            if (v->res && s->tstamp[w] == stamp && s->disp[w]) displaced--;
        } else {
            i64 p = st_alloc(s, m, &L, win_class(s, w));
            if (p < 0) return i;
            s->tstamp[w] = stamp;
            s->disp[w] = p != s->cp[w];
            displaced += s->disp[w];
            s->cp[w] = p;
        }
        if (i > hi) {
            /* the same mask, every reservation in the same window: as before from here on */
            if (!displaced && !memcmp(tmp, ST(s, i + 1 - d), bytes) && (!fl || ls_same(s, s->ls_tmp, s->lslot[i + 1 - d]))) {
                if (d) st_move(s, i + 1, i + 1 - d, ne - i); /* the rest of the kept masks, states i+1 .. ne, move d places */
                s->st_valid = 1;
                return -1;
            }
            memcpy(ST(s, i + 1), tmp, bytes);
            if (fl) { i32 x = s->lslot[i + 1]; s->lslot[i + 1] = s->ls_tmp; s->ls_tmp = x; }
        }
        s->fit_known[i + 1] = 0;
    }
    s->st_valid = 1;
    return -1;
}

/* the plan of this pass: the running jobs' releases at their expected ends and, with `reservations`,
 * every queued job's reservation; 1 if it is feasible, 0 if not, -1 on no memory */
static int plan_build(Sim *s, int reservations) {
    Running *r = &s->running;
    i64 m = 0, nr = r->n;
    if (grow((void **)&s->ev2, &s->cap_ev2, s->ne + nr, sizeof(PEv)) < 0) return -1;
    /* the reservations' events, in order, from the last pass's plan (whose events are the live
     * reservations' and jobs since started or given up): among the queued jobs the queue's order is
     * unchanged, so renumbering their places keeps the order */
    PEv *res = s->ev2;
    if (reservations)
        for (i64 i = 0; i < s->ne; i++) {
            PEv e = s->ev[i];
            if (!e.res || isnan(s->res[e.who])) continue;
            if (e.kind) e.order = s->prio[e.who];
            res[m++] = e;
        }
    i64 ne = m + nr;
    PEv *run = s->ev2 + m;
    if (plan_reserve(s, ne) < 0) return -1;
    /* the running jobs' releases: in the running list's order, unless jobs past their expected ends
     * (released at the same next instant) are out of start order */
    int sorted = 1;
    for (i64 k = 0; k < nr; k++) {
        run[k] = (PEv){expected_end(r->a[k].ee, s->now), r->a[k].serial, 0, r->a[k].job, 0, 0};
        if (k && cmp_pev(&run[k - 1], &run[k]) > 0) sorted = 0;
    }
    if (!sorted) qsort(run, (size_t)nr, sizeof(PEv), cmp_pev);
    if (grow((void **)&s->ev3, &s->cap_ev3, ne, sizeof(PEv)) < 0) return -1;
    PEv *to = s->ev3;
    i64 x = 0, y = 0, n = 0;
    while (x < m && y < nr) to[n++] = cmp_pev(&res[x], &run[y]) < 0 ? res[x++] : run[y++];
    while (x < m) to[n++] = res[x++];
    while (y < nr) to[n++] = run[y++];
    /* the events the last plan ended with, in the same order: from there on its kept masks may serve
     * (jobs ended and started since only took events out, so they are as far or further on) */
    i64 ne_old = s->ne, same = 0;
    if (s->st_valid && n <= ne_old)
        while (same < n) {
            const PEv *a = &to[n - 1 - same], *b = &s->ev[ne_old - 1 - same];
            if (a->t != b->t || a->kind != b->kind || a->who != b->who || a->res != b->res) break;
            same++;
        }
    s->ev3 = s->ev; s->ev = to;
    { i64 c = s->cap_ev3; s->cap_ev3 = s->cap_ev; s->cap_ev = c; }
    s->ne = n;
    memcpy(ST(s, 0), s->busy, (size_t)s->swords * sizeof(u64));
    if (s->layout == L_FREE) { /* the allocator's lists now, holding the running jobs */
        Lists L = ls_at(s, s->lslot[0]);
        memcpy(L.held, s->L.held, lists_used(s, &s->L));
        *L.held = r->n;
    }
    s->fit_known[0] = 0;
    return same ? plan_replay(s, 0, n - 1 - same, n - ne_old) < 0 : plan_replay(s, 0, n, 0) < 0;
}

/* the plan's free positions over time (plan.CountingProfile's profile): at each time, after all its
 * events; a breakpoint wherever that changes */
static int prof_from_plan(Sim *s) {
    Steps *p = &s->prof;
    if (steps_reserve(p, s->ne + 2) < 0) return -1;
    const PEv *ev = s->ev;
    i64 ne = s->ne, i = 0, v = s->free, n = 1;
    double t = s->now;
    for (;;) {
        for (; i < ne && ev[i].t == t; i++) v += ev[i].kind ? -s->size[ev[i].who] : s->size[ev[i].who];
        if (n == 1 && t == s->now) p->v[0] = v;
        else if (v != p->v[n - 1]) { p->t[n] = t; p->v[n] = v; n++; }
        if (i >= ne) break;
        t = ev[i].t;
    }
    p->t[0] = s->now;
    p->n = n;
    return 0;
}

/* whether a window of 2**k positions is free in kept mask i (remembered per mask; a state's mask and lists
 * change together).  On the free list without recognition (layout 5) the mask does not say: whether kept
 * state i's lists hold a cube of k dimensions or more, which _allocate would split down to k. */
static inline int plan_fits(Sim *s, i64 i, int k) {
    u64 b = (u64)1 << k;
    if (!(s->fit_known[i] & b)) {
        s->fit_known[i] |= b;
        int yes, at;
        if (s->layout == L_FREE && !s->recognise) {
            Lists L = ls_at(s, s->lslot[i]);
            yes = fl_least(s, &L, k, &at) >= 0;
        } else yes = fits_mask(s, ST(s, i), k);
        if (yes) s->fit_yes[i] |= b;
        else s->fit_yes[i] &= ~b;
    }
    return (s->fit_yes[i] & b) != 0;
}

/* whether window c of class k is all free in mask m */
static inline int win_free(const Sim *s, const u64 *m, i64 c, int k) {
    if (s->layout == L_TABLE) return row_free(s, m, c);
    i64 len = (i64)1 << k;
    if (c + len <= s->nodes && (c & 63) + len <= 64) return !(m[c >> 6] & (low_bits(len) << (c & 63)));
    if (c + len <= s->nodes && !(c & 63) && !(len & 63)) return words_clear(m, c >> 6, len >> 6);
    for (i64 q = c, rem = len; rem > 0;) { /* as mark() walks it: by words, cyclically */
        q %= s->nodes;
        int off = (int)(q & 63);
        i64 bits = rem < 64 - off ? rem : 64 - off;
        if (bits > s->nodes - q) bits = s->nodes - q;
        if (m[q >> 6] & (low_bits(bits) << off)) return 0;
        q += bits;
        rem -= bits;
    }
    return 1;
}

/* the trial's replay from event i0 on, T (and on the free list L) its state before that event, the job's
 * window p (`live`: it still holds it, ending at `tend`), its old window in the plan's state (`held`: from
 * its old start to its old end), every reservation so far in the window it holds in the plan: 1 if every
 * allocation finds a window (see trial_mask).  On a mask, while the plan's state holds no window the
 * trial's does not (its old window, the plan windows of reservations displaced), the trial's state holds
 * the plan's, so a reservation whose plan window is free in it takes that window (the first free in the
 * plan's state) without a search. */
static int trial_replay(Sim *s, i64 j, i64 i0, u64 *T, Lists *L, i64 p, int live, int held, double tend, int has, i64 ie_old) {
    int fl = s->layout == L_FREE;
    i64 size = s->size[j];
    i64 stamp = ++s->trials;
    i64 displaced = 0;
    for (i64 i = i0; i < s->ne; i++) {
        const PEv *v = &s->ev[i];
        i64 w = v->who;
        if (v->res && w == j) { held = v->kind; continue; } /* its old reservation: taken out */
        if (live && !pev_before(v, tend, 0, -1, j)) { /* the job's end, (end_at(t, span), 0, -1, j), comes first */
            st_release(s, T, L, p, size);
            live = 0;
        }
        if (v->kind == 0) {
            int mine = v->res && s->tstamp[w] == stamp;
            st_release(s, T, L, !v->res ? s->pos[w] : mine ? s->tp[w] : s->cp[w], s->size[w]);
            if (mine && s->disp[w]) displaced--;
        } else {
            i64 q, c = s->cp[w];
            int kw = win_class(s, w);
            if (!fl && !held && !displaced && win_free(s, T, c, kw)) {
                q = c;
                win_mark(s, T, c, s->size[w], 1);
            } else if ((q = st_alloc(s, T, L, kw)) < 0) return 0;
            s->tp[w] = q;
            s->tstamp[w] = stamp;
            s->disp[w] = q != s->cp[w];
            displaced += s->disp[w];
        }
        /* the plan's own state from here on (on the free list, the lists too) */
        if (!live && !displaced && (!has || i >= ie_old) && (!fl || ls_same(s, s->ls_trial, s->lslot[i + 1]))) return 1;
    }
    return 1;
}

/* whether window a of class ka and window b of class kb share a position (windows of 2**k cyclically
 * consecutive positions, or on a table rows of masks) */
static int win_meets(const Sim *s, i64 a, int ka, i64 b, int kb) {
    if (s->layout == L_TABLE) {
        const u64 *x = s->tab + (size_t)a * (size_t)s->words, *y = s->tab + (size_t)b * (size_t)s->words;
        i32 lo = s->tspan[2 * a] > s->tspan[2 * b] ? s->tspan[2 * a] : s->tspan[2 * b];
        i32 hi = s->tspan[2 * a + 1] < s->tspan[2 * b + 1] ? s->tspan[2 * a + 1] : s->tspan[2 * b + 1];
        for (i32 i = lo; i <= hi; i++)
            if (x[i] & y[i]) return 1;
        return 0;
    }
    i64 n = s->nodes, d1 = b - a, d2 = a - b; /* b within a's positions, or a within b's */
    if (d1 < 0) d1 += n;
    if (d2 < 0) d2 += n;
    return d1 < ((i64)1 << ka) || d2 < ((i64)1 << kb);
}

/* the trial's state before event i in s->trial, while every reservation holds its plan window: kept mask i
 * less the job's old window o (o >= 0: the plan holds it there), with its window p (p >= 0: live) */
static u64 *trial_state_at(Sim *s, i64 i, i64 o, i64 p, i64 size) {
    u64 *T = s->trial;
    memcpy(T, ST(s, i), (size_t)s->words * sizeof(u64));
    if (o >= 0) win_mark(s, T, o, size, 0);
    if (p >= 0) win_mark(s, T, p, size, 1);
    return T;
}

/* In the trial's state (P less the job's old window o, with its window p where p >= 0; P the kept mask i,
 * which holds o), whether a window of class kw comes before window c, free in it (c is the plan's
 * window there, free in P, and meets no p).  Such a window meets o, for every earlier one meets P (c is
 * P's first); the buddy's answer from that, the others' by placing on the state (s->trial, scratch). */
static int freed_before(Sim *s, i64 i, i64 c, int kw, i64 o, int k, i64 p, i64 size) {
    i64 lo = (i64)1 << k;
    if (s->layout == L_BUDDY) {
        /* aligned windows: one of at most 2**k positions is within o, and the first of those, at o, is free
         * (p, of o's class, is o or meets none of o: here not o); a larger one holds o, the one at o's
         * multiple of 2**kw, free if P holds no position of it outside o and p is not within it */
        if (kw <= k) return o < c;
        i64 wa = o >> kw << kw, wl = (i64)1 << kw;
        if (wa >= c || (p >= 0 && p >> kw == o >> kw)) return 0;
        const u64 *P = ST(s, i);
        for (i64 x = wa; x < wa + wl; x += 64) { /* (kw > k >= 0: kw >= 1; a window of under 64 sits in a word) */
            i64 wi = x >> 6;
            u64 in = wl >= 64 ? ~(u64)0 : low_bits(wl) << (wa & 63), b = P[wi] & in;
            if (wi == o >> 6 && lo < 64) b &= ~(low_bits(lo) << (o & 63));
            else if (lo >= 64 && wi >= o >> 6 && wi < (o + lo) >> 6) b = 0;
            if (b) return 0;
        }
        return 1;
    }
    if (s->layout == L_GRAY && o + lo <= s->nodes && o - ((i64)1 << kw) + 1 >= c)
        return 0; /* every window meeting o (not wrapping) starts after c (a wrapping window is the last) */
    return place(s, trial_state_at(s, i, o, p, size), kw) != c; /* (a window holds its job's `size` positions) */
}

/* the rest of the plan replayed with job j placed at t on kept mask e (where it fits), its own old
 * events (`has`: the old end is event ie_old) left out: 1 if every allocation finds a window.
 * On a mask (not the free list) the trial's state is known from the plan's while every reservation
 * holds its plan window: P (the kept mask) with the job's window p added while it is live, and its old
 * window o taken out while the plan holds it.  Each place is a first free window in a fixed order, so
 * a reservation keeps its plan window c unless c meets p, or a window before c is free for o's
 * absence (freed_before); only from the first that moves is the state built and replayed. */
static int trial_mask(Sim *s, i64 j, i64 e, double t, int k, double span, int has, i64 ie_old) {
    double tend = end_at(t, span);
    i64 size = s->size[j];
    if (s->layout == L_FREE) {
        u64 *T = s->trial;
        memcpy(T, ST(s, e), (size_t)s->swords * sizeof(u64));
        ls_copy(s, s->ls_trial, s->lslot[e]);
        Lists L = ls_at(s, s->ls_trial);
        i64 p = st_alloc(s, T, &L, k);
        if (p < 0) return 0; /* (plan_fits said it fits: not reached) */
        return trial_replay(s, j, e, T, &L, p, 1, 0, tend, has, ie_old);
    }
    i64 p = place(s, ST(s, e), k), o = -1; /* o: its old window, while the plan's states hold it */
    int live = 1;
    for (i64 i = e; i < s->ne; i++) {
        const PEv *v = &s->ev[i];
        i64 w = v->who;
        if (v->res && w == j) { o = v->kind ? s->cp[j] : -1; continue; }
        if (live && !pev_before(v, tend, 0, -1, j)) live = 0;
        if (v->kind) {
            i64 c = s->cp[w];
            int kw = win_class(s, w);
            if ((live && win_meets(s, c, kw, p, k)) || (o >= 0 && !(live && o == p) && freed_before(s, i, c, kw, o, k, live ? p : -1, size))) {
                u64 *T = trial_state_at(s, i, o, live ? p : -1, size); /* replayed from event i */
                return trial_replay(s, j, i, T, NULL, p, live, o >= 0, tend, has, ie_old);
            }
        }
        if (!live && (!has || i >= ie_old)) return 1;
    }
    return 1;
}

/* the first event not before the key (t, kind, order, job), among events lo .. hi-1 (those before lo are before it,
 * those from hi on are not) */
static i64 pev_lower_in(const Sim *s, i64 lo, i64 hi, double t, int kind, i64 order, i64 job) {
    while (lo < hi) {
        i64 mid = (lo + hi) / 2;
        if (pev_before(&s->ev[mid], t, kind, order, job)) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static inline i64 pev_lower(const Sim *s, double t, int kind, i64 order, i64 job) { return pev_lower_in(s, 0, s->ne, t, kind, order, job); }

/* the first start from t0 on (t0 itself, then the profile's breakpoints after it), before `limit`
 * if `has`, whose whole span the profile holds (the job's own reservation, `old` to `old_end`, counted
 * free): prof_earliest's scan, from a time that need not be a breakpoint.  If a later time whose
 * span the profile holds is not a breakpoint, the profile is the same from the last breakpoint (or
 * t0) before it, whose span it then holds too: so no start the profile holds is passed over.
 * 0 and the start in *out (the segment it falls in: *at), or 1 if there is none.  The profile ends with a
 * sentinel.  i0: t0's index where t0 is a breakpoint the caller found (the search for it saved), else -1;
 * then every breakpoint before index `from` is before t0 (the search for it starts there). */
static int prof_first_from(const Steps *p, double t0, i64 i0, i64 from, double limit, i64 size, double span, int has, double old, double old_end, double *out, i64 *at) {
    const double *t = p->t;
    const i64 *v = p->v;
    i64 n = p->n;
    i64 i = i0; /* the segment t0 falls in (t[0] = now <= t0; i0 >= 0: t0 is breakpoint i0) */
    if (i < 0) {
        i = steps_lower_from(p, t0, from); /* (t0 = now: 0, at the first look) */
        if (!(i < n && t[i] == t0)) i--;
    }
    double start = t0;
    for (;;) {
        if (v[i] < size) {
            i++;
            if (has) while (t[i] < limit && v[i] < size) i++;
            else while (v[i] < size) i++;
            start = t[i];
        }
        if (i >= n || (has && !(start < limit))) return 1;
        i64 k = span_short(p, i + 1, end_at(start, span), size, has, old, old_end);
        if (k >= n) { *out = start; *at = i; return 0; }
        i = k + 1;
        start = t[i];
    }
}

/* The first event from index `lo` on for which `cond` (on the event `e`) fails, where it holds for a run of events
 * from lo and then fails for every later one: galloping from lo (steps 1, 2, 4, ... until it fails), then a binary
 * search in the last step.  O(log d) for an answer d events on: the searches of earliest_mask look a few events
 * past where the last one ended (the events at one time are few, the next candidate time is near). */
#define PEV_GALLOP(s, lo, cond) __extension__ ({                                   \
    i64 lo_ = (lo), ne_ = (s)->ne, hi_ = lo_, step_ = 1;                          \
    while (hi_ < ne_) {                                                           \
        const PEv *e = &(s)->ev[hi_];                                             \
        if (!(cond)) break;                                                       \
        lo_ = hi_ + 1;                                                            \
        hi_ = lo_ + step_ - 1;                                                    \
        step_ <<= 1;                                                              \
    }                                                                             \
    if (hi_ > ne_) hi_ = ne_;                                                     \
    while (lo_ < hi_) {                                                           \
        i64 mid_ = lo_ + (hi_ - lo_) / 2;                                         \
        const PEv *e = &(s)->ev[mid_];                                            \
        if (cond) lo_ = mid_ + 1; else hi_ = mid_;                                \
    }                                                                             \
    lo_; })

/* the first event at or after time t, from index `from` on (every event before it is before t) */
static inline i64 pev_time_lower(const Sim *s, double t, i64 from) { return PEV_GALLOP(s, from, e->t < t); }

/* ReplayPlan.earliest for queued job j (its old reservation `old` if `has`): 0 and the start in *out,
 * or ST_PLAN_NEVER_FITS.  Candidates in order, each at its turn: the kept mask before the first event
 * after (t, 1, place in the queue, j).  Each is tested by necessary conditions first, cheapest first,
 * and only a candidate passing all of them is given a trial:
 * - the counts: while the job holds its window, every kept mask must have as many free positions as
 *   the window beside what the plan holds there (its old reservation counted free), or some
 *   allocation of the trial fails.  At a time the releases come first and then the allocations, which
 *   only take positions, so between event times the fewest free positions are those after all of
 *   them: that is the plan's profile of free positions over time (s->prof, plan.CountingProfile's),
 *   which must hold the job from t for its span.  The candidates it holds are found by its scan
 *   (prof_first_from), from the last candidate on, as conservative_pass finds a start;
 * - the window must fit the mask at the turn.  The masks from the first allocation at t (`rel`) to
 *   the last shrink, so a window that does not fit at `rel` fits at no turn at t;
 * - then the turn itself (bisected among the allocations at t), the window at the turn, and the
 *   trial.
 * The scan starts at t (now, or a breakpoint of the profile) and looks at no start from `limit` (<= old)
 * on (see conservative_pass_mask for when the others are known to fail).  *blocked: whether every
 * start it looked at before its answer failed on the counts (none was refused by the masks).  ti: t's
 * index in the profile where the caller knows it (else -1).  The first event at t is looked for only once
 * the counts allow a start: most searches of a compression end on the counts alone. */
static int earliest_mask(Sim *s, i64 j, int has, double old, double t, i64 ti, double limit, double *out, int *blocked) {
    int k = win_class(s, j);
    i64 need = s->size[j];
    double span = span_of(s->est[j]);
    i64 prio = s->prio[j], ie_old = -1, ne = s->ne;
    const PEv *ev = s->ev;
    i64 g = t == s->now ? 0 : -1; /* the first event at or after t (-1: not yet looked for) */
    i64 pi = 0; /* the profile's segment of the last candidate: every breakpoint before it is before the next */
    *blocked = 1;
    for (;;) {
        double c;
        if (prof_first_from(&s->prof, t, ti, pi, limit, need, span, has, old, end_at(old, span), &c, &pi)) break;
        ti = -1;
        if (c != t || g < 0) { t = c; g = pev_time_lower(s, t, g < 0 ? 0 : g); } /* a breakpoint: an event's time */
        /* the first allocation at t and the first event after t (releases come first at a time) */
        i64 rel = g, ge = g;
        if (g < ne && ev[g].t == t) { /* (from g on every event is at t or later, and at t releases come first) */
            rel = PEV_GALLOP(s, g, e->t == t && e->kind == 0);
            ge = PEV_GALLOP(s, rel, e->t == t);
        }
        if (plan_fits(s, rel, k)) {
            i64 e = rel, hi = ge; /* the turn: the allocations at t are in (order, job) order */
            while (e < hi) {
                i64 mid = (e + hi) / 2;
                if (ev[mid].order < prio || (ev[mid].order == prio && ev[mid].keyjob < j)) e = mid + 1; else hi = mid;
            }
            if (has && ie_old < 0) ie_old = pev_lower(s, end_at(old, span), 0, -1, j); /* its own end (its time as when it was made) */
            if (plan_fits(s, e, k) && trial_mask(s, j, e, t, k, span, has, ie_old)) {
                *out = t;
                return 0;
            }
        }
        *blocked = 0; /* a start the counts allow, refused by the masks */
        if (ge >= ne) break;
        t = ev[ge].t;
        g = ge;
    }
    if (has) { *out = old; return 0; }
    s->err_job = j;
    return ST_PLAN_NEVER_FITS;
}

static void pev_insert(Sim *s, PEv v) {
    i64 i = pev_lower(s, v.t, v.kind, v.order, v.keyjob);
    memmove(&s->ev[i + 1], &s->ev[i], (size_t)(s->ne - i) * sizeof(PEv));
    s->ev[i] = v;
    s->ne++;
}

/* job j's reservation (if `has`) taken out and put at t (before it, where it was), the kept masks
 * replayed from there: 0, -1 on no memory, or ST_PLAN_BROKEN if the plan no longer replays (the
 * trial said it would) */
static int plan_move(Sim *s, i64 j, int has, double old, double t) {
    double span = span_of(s->est[j]);
    i64 hi = -1;
    PEv a = {t, s->prio[j], j, j, 1, 1}, b = {end_at(t, span), -1, j, j, 0, 1};
    i64 ib;
    if (has) { /* its two events, found as earliest_mask found them, each moved to its earlier place */
        i64 ia = pev_lower(s, old, 1, s->prio[j], j), ie = pev_lower_in(s, ia, s->ne, end_at(old, span), 0, -1, j);
        if (ie >= s->ne || s->ev[ia].who != j || !s->ev[ia].res || s->ev[ie].who != j || !s->ev[ie].res) { s->err_job = j; return ST_PLAN_BROKEN; }
        i64 ya = pev_lower_in(s, 0, ia, a.t, a.kind, a.order, a.keyjob); /* <= ia: the events from there to ia move up one */
        memmove(&s->ev[ya + 1], &s->ev[ya], (size_t)(ia - ya) * sizeof(PEv));
        s->ev[ya] = a;
        ib = pev_lower_in(s, 0, ie, b.t, b.kind, b.order, b.keyjob); /* <= ie, likewise */
        memmove(&s->ev[ib + 1], &s->ev[ib], (size_t)(ie - ib) * sizeof(PEv));
        s->ev[ib] = b;
        hi = ie > ib ? ie : ib; /* past the old end, the events are where they were */
    } else {
        if (plan_reserve(s, s->ne + 2) < 0) return -1;
        pev_insert(s, a);
        pev_insert(s, b);
        ib = pev_lower(s, b.t, b.kind, b.order, b.keyjob);
    }
    i64 from = pev_lower(s, a.t, a.kind, a.order, a.keyjob);
    if (!has && ib > from) { /* two more events: the kept masks after the end's place move two places on, to be compared there */
        st_move(s, ib + 1, ib - 1, s->ne - ib); /* old states ib-1 .. ne-2 */
        hi = ib;
    } else if (!has) hi = s->ne; /* the end at or before the start's place: end_at puts it two float steps on at least, so
                                   * this is not reached; kept as the safe answer, a replay to the end, nothing compared */
    if (plan_replay(s, from, hi, 0) >= 0) { s->err_job = j; return ST_PLAN_BROKEN; }
    return 0;
}

/* Conservative.schedule with ReplayPlan, on the busy mask (the counting pass's steps, in the same order) */
static int conservative_pass_mask(Sim *s) {
    Queue *q = &s->q;
    s->wake = NAN;
    if (q->head < 0) return 0;
    double now = s->now;
    int stale = reservations_stale(s);
    i64 n = 0;
    for (i64 j = q->head; j >= 0; j = q->next[j]) {
        if (stale) s->res[j] = NAN;
        s->prio[j] = n++;
    }
    int overrun = overrunning(s);
    if (s->plan_same && !stale && !overrun) {
        /* nothing ended or started since the last pass, and no release depends on now: its plan is this
         * one's (jobs that arrived since have no reservation yet); the places in the queue renumbered */
        for (i64 i = 0; i < s->ne; i++)
            if (s->ev[i].kind) s->ev[i].order = s->prio[s->ev[i].who];
    } else {
        int ok = plan_build(s, 1);
        if (ok < 0) return -1;
        if (!ok) { /* remake every reservation from scratch, in queue order */
            for (i64 j = q->head; j >= 0; j = q->next[j]) s->res[j] = NAN;
            if (plan_build(s, 0) < 0) return -1;
        }
    }
    /* the plan's free positions over time (see earliest_mask) */
    if (prof_from_plan(s) < 0) return -1;
    Steps *p = &s->prof;
    /* Compression.  A job whose last search found every start before its reservation short on the
     * counts (`blocked`: no start there refused by the masks alone) is in conservative_pass's case:
     * the counts are monotone, so such a start b can pass them now only if the profile grew since,
     * somewhere b's span reaches, before the growth ends; growth is tracked as there (early ends,
     * moves, dropped reservations, zero-length starts).  Its search then looks only at those starts,
     * and with none it keeps its reservation.  A job some start of which the masks refused, or a pass
     * with a job past its expected end (releases then move with now), searches from now. */
    int full = stale || overrun;
    Growth gr = growth_begin(s);
    for (i64 j = q->head; j >= 0; j = q->next[j]) {
        double old = s->res[j], t;
        int has = !isnan(old), blocked;
        double span = span_of(s->est[j]);
        double from = now, limit = old;
        i64 r = q_rank(q, j), fi = 0;
        if (has && s->blocked[j] && !full) {
            double a, c;
            growth_for(s, &gr, r, &a, &c);
            if (!(a < INFINITY)) continue;
            if (c < limit) limit = c;
            i64 lo = steps_first_reaching(p, span, a);
            if (lo >= p->n || !(p->t[lo] < limit)) continue;
            from = p->t[lo];
            fi = lo;
        }
        if (with_sentinel(p) < 0) return -1;
        int st = earliest_mask(s, j, has, old, from, fi, limit, &t, &blocked);
        if (st) return st;
        s->blocked[j] = (unsigned char)blocked;
        if (has && t == old) continue; /* given up and taken again: the same plan */
        s->changes++;
        if ((st = plan_move(s, j, has, old, t))) return st;
        if (has) {
            double old_end = end_at(old, span);
            if (steps_add(p, old, old_end, s->size[j], p->v[p->n - 1]) < 0) return -1;
            if (growth_moved(s, &gr, r, old, old_end) < 0) return -1;
        }
        if (steps_add(p, t, end_at(t, span), -s->size[j], p->v[p->n - 1]) < 0) return -1;
        s->res[j] = t;
    }
    /* jobs whose reservation is now start now, in queue order (a refused one loses its reservation) */
    s->plan_same = 1;
    for (i64 j = q->head; j >= 0;) {
        i64 nx = q->next[j];
        if (s->res[j] <= now) {
            double t = s->res[j];
            s->res[j] = NAN;
            s->plan_same = 0;
            i64 p = alloc_now(s, j);
            if (p >= 0 && start_job_at(s, j, p) < 0) return -1;
            /* refused: its reservation is dropped; started, it is expected to end at now + estimate,
             * before its reservation did where the estimate is zero or rounds away (see conservative_pass) */
            double end = end_at(t, span_of(s->est[j]));
            if (p < 0 || end != now + s->est[j]) grew(s, t, end);
        }
        j = nx;
    }
    wake_at_next_reservation(s);
    return 0;
}

static int simulate(Sim *s) {
    const double inf = INFINITY;
    i64 next = 0, n = s->n, tick = 0;
    for (;;) {
        double t_end = s->heap.n ? s->heap.a[0].t : inf;
        double t_arr = next < n ? s->submit[next] : inf;
        double now = t_end <= t_arr ? t_end : t_arr;
        if (now == inf) break;
        /* Ctrl-C: asked after so many events; a conservative pass on a layout can take a millisecond
         * (its plan's trials), so there every 16 (4,096 let Ctrl-C wait seconds on the free list) */
        if (++tick == (s->kind == K_CONSERVATIVE ? 16 : 4096)) {
            tick = 0;
            if (PyErr_CheckSignals() < 0) return -1;
        }
        if (s->progress && s->ended >= s->pnext) { /* (a run of minutes shows how far it is) */
            s->pnext = s->ended + s->ptick;
            PyObject *r = PyObject_CallFunction(s->progress, "L", (long long)s->ended);
            if (!r) return -1;
            Py_DECREF(r);
        }
        s->now = now;
        s->released = 0;
        if (t_end <= now) {
            while (s->heap.n && s->heap.a[0].t <= now) {
                Event e = heap_pop(&s->heap);
                if (e.job < 0) { ts_discard(&s->pending, now); continue; }
                i64 j = e.job;
                s->ended++;
                if (s->log) s->log[s->nlog++] = -1 - j;
                double ee = s->start[j] + s->est[j];
                s->free += s->size[j];
                s->plan_same = 0;
                if (s->layout) mark_job(s, s->busy, j, 0);
                run_remove(&s->running, ee, j);
                if (s->layout == L_FREE) fl_release(s, s->pos[j]);
                s->released = 1;
                if (ee > now) { /* ended before its expected end */
                    grew(s, now, ee);
                    /* its processors are free from now rather than from its expected end */
                    if (s->prof_kept && steps_add(&s->prof, now, ee, s->size[j], 0) < 0) return -1;
                }
            }
        }
        i64 first = next;
        if (t_arr <= now) {
            while (next < n && s->submit[next] <= now) {
                q_insert(&s->q, next);
                if (s->cls) cls_add(s, log2_of(s->size[next]), q_rank(&s->q, next), s->est[next]);
                fw_add(&s->waiting, s->size[next], 1);
                next++;
            }
        }
        int st;
        if (s->kind == K_FCFS) st = start_heads(s);
        else if (s->kind == K_EASY) st = easy_pass(s, first, next);
        else st = s->layout ? conservative_pass_mask(s) : conservative_pass(s);
        if (st) return st;
        if (s->kind == K_CONSERVATIVE && !isnan(s->wake) && s->wake > now && ts_find(&s->pending, s->wake) < 0) {
            if (ts_add(&s->pending, s->wake) < 0) return -1;
            s->seq++;
            if (heap_push(&s->heap, s->wake, s->seq, -1) < 0) return -1;
        }
    }
    if (s->q.len) { s->err_job = s->q.head; return ST_NEVER_STARTED; }
    return 0;
}

/* ------------------------------------------------------------ the binding */

static int get_buf(PyObject *obj, Py_buffer *v, int itemsize, i64 n, int writable, const char *name) {
    if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (v->itemsize != itemsize || v->len != (Py_ssize_t)(n * itemsize)) {
        PyErr_Format(PyExc_ValueError, "%s: expected %lld items of %d bytes", name, (long long)n, itemsize);
        PyBuffer_Release(v);
        v->obj = NULL;
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(run_doc,
"run(kind, nodes, submit, run, estimate, size, rank, incremental, start, end[, log[, layout[, placed[, table, bounds, classes[, progress]]]]]) -> (status, job, tried, changes)\n\n"
"Simulate every job on a counting allocator of `nodes` processors: kind 0 FCFS,\n"
"1 EASY, 2 conservative.  `rank` (int64 permutation, or None for FCFS order)\n"
"is each job's place in the queue order.  Fills `start` and `end`.  status 0 ok;\n"
"1 jobs never started, 2 an EASY head never fits, 3 a job never fits the\n"
"conservative profile, 4 a job never fits the conservative plan (a layout), 5 the plan\n"
"no longer replays after a move its trial found feasible (a defect of the kernel)\n"
"(job: the first such job position).  `log` (int64, 2n items, optional)\n"
"receives every start (j) and every end (-1 - j) in the order the simulation applied them.\n"
"`layout` 1 (buddy) or 2 (Gray code): every scheduler on the busy mask of a hypercube of\n"
"`nodes` (a power of two) positions; `size` is then each job's window (a power of two).\n"
"`layout` 3 (the free list with complete recognition, dimension at most 15): every scheduler.\n"
"`layout` 5 (the free list looking at its lists only, dimension at most 15): FCFS and conservative.\n"
"`layout` 4 (a table of windows: the static slice rule): FCFS and conservative on the busy\n"
"mask of `nodes` positions (units); `size` is each job's volume, `table` (uint64) the windows'\n"
"masks (ceil(nodes / 64) words each, class after class, each class in search order), `bounds`\n"
"(int64, classes + 1 items, at most 64 classes) where each class's rows begin, `classes` (int64,\n"
"n items) each job's class; a job takes the first window of its class that is all free.\n"
"`placed` (int64, n items, optional) receives each job's position (layouts 3 and 5: its cube,\n"
"free << dim | value; layout 4: its window's row).  `tried`: with a log on layout 3, the (log position, job) pairs, as\n"
"int64 bytes, of the candidates EASY allocated and released again that left the lists otherwise\n"
"than they were (the replay repeats them); else None.\n"
"`changes`: under conservative, the reservations made or moved (a remade plan makes each again).\n"
"status 6: the free list's lists disagreed with a peek at them (a defect of the kernel).\n"
"`progress` (optional, after `classes`): a callable given the number of jobs ended so far, about every\n"
"n / 200 ends while the simulation runs; an exception it raises stops the run and is raised.");

static PyObject *py_run(PyObject *self, PyObject *args) {
    (void)self;
    int kind, incremental, layout = L_COUNT;
    long long nodes;
    PyObject *o_submit, *o_run, *o_est, *o_size, *o_rank, *o_start, *o_end, *o_log = Py_None, *o_placed = Py_None;
    PyObject *o_tab = Py_None, *o_tlo = Py_None, *o_jcls = Py_None, *o_progress = Py_None;
    if (!PyArg_ParseTuple(args, "iLOOOOOpOO|OiOOOOO", &kind, &nodes, &o_submit, &o_run, &o_est, &o_size, &o_rank, &incremental, &o_start, &o_end, &o_log, &layout, &o_placed,
                          &o_tab, &o_tlo, &o_jcls, &o_progress))
        return NULL;
    if (kind < K_FCFS || kind > K_CONSERVATIVE) return PyErr_Format(PyExc_ValueError, "kind: expected 0, 1 or 2, got %d", kind);
    if (o_progress != Py_None && !PyCallable_Check(o_progress)) return PyErr_Format(PyExc_TypeError, "progress: expected a callable or None");
    if (layout < L_COUNT || layout > L_FREE_LISTS) return PyErr_Format(PyExc_ValueError, "layout: expected 0, 1, 2, 3, 4 or 5, got %d", layout);
    int recognise = layout == L_FREE;
    if (layout == L_FREE_LISTS) {
        if (kind == K_EASY) return PyErr_Format(PyExc_ValueError, "layout 5: FCFS and conservative only (EASY's shadow asks the busy mask whether a cube fits, which only complete recognition answers)");
        if (nodes > 32768) return PyErr_Format(PyExc_ValueError, "layout 5: at most 32768 nodes (a cube's key is an int32), got %lld", nodes);
        layout = L_FREE;
    }
    if ((layout == L_TABLE) != (o_tab != Py_None) || (o_tab != Py_None) != (o_tlo != Py_None) || (o_tab != Py_None) != (o_jcls != Py_None))
        return PyErr_Format(PyExc_ValueError, "table, bounds, classes: given with layout 4, and only then");
    if (layout == L_TABLE && kind == K_EASY) return PyErr_Format(PyExc_ValueError, "layout 4: FCFS and conservative only (EASY's walk assumes windows that nest)");
    if (layout == L_TABLE && nodes < 1) return PyErr_Format(PyExc_ValueError, "layout 4: nodes must be at least 1, got %lld", nodes);
    if (layout == L_FREE && nodes > 32768) return PyErr_Format(PyExc_ValueError, "layout 3: at most 32768 nodes (a cube's key is an int32), got %lld", nodes);
    if (o_placed != Py_None && !layout) return PyErr_Format(PyExc_ValueError, "placed: positions are a layout's");
    if (layout && layout != L_TABLE && (nodes < 1 || (nodes & (nodes - 1)))) return PyErr_Format(PyExc_ValueError, "layout %d: nodes must be a power of two, got %lld", layout, nodes);
    if (incremental && layout) return PyErr_Format(PyExc_ValueError, "layout %d: the arrivals-only pass is for counts", layout);
    Py_buffer b[12];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    Sim s;
    memset(&s, 0, sizeof s);
    Py_ssize_t n = PyObject_Length(o_submit);
    if (n < 0) return NULL;
    if (n >= INT32_MAX) return PyErr_Format(PyExc_ValueError, "at most %d jobs", INT32_MAX - 1);
    if (get_buf(o_submit, &b[0], 8, n, 0, "submit") < 0 || get_buf(o_run, &b[1], 8, n, 0, "run") < 0 ||
        get_buf(o_est, &b[2], 8, n, 0, "estimate") < 0 || get_buf(o_size, &b[3], 8, n, 0, "size") < 0 ||
        get_buf(o_start, &b[4], 8, n, 1, "start") < 0 || get_buf(o_end, &b[5], 8, n, 1, "end") < 0 ||
        (o_rank != Py_None && get_buf(o_rank, &b[6], 8, n, 0, "rank") < 0) ||
        (o_log != Py_None && get_buf(o_log, &b[7], 8, 2 * n, 1, "log") < 0) ||
        (o_placed != Py_None && get_buf(o_placed, &b[8], 8, n, 1, "placed") < 0))
        goto done;
    if (layout == L_TABLE) {
        i64 nw = (nodes + 63) / 64;
        Py_ssize_t nb = PyObject_Length(o_tlo);
        if (nb < 0) goto done;
        if (nb < 2 || nb > 65) { PyErr_Format(PyExc_ValueError, "bounds: expected 2 to 65 items (1 to 64 classes), got %zd", nb); goto done; }
        if (get_buf(o_tlo, &b[10], 8, nb, 0, "bounds") < 0 || get_buf(o_jcls, &b[11], 8, n, 0, "classes") < 0) goto done;
        const i64 *lo = b[10].buf;
        for (Py_ssize_t c = 0; c + 1 < nb; c++)
            if (lo[0] != 0 || lo[c + 1] <= lo[c]) { PyErr_SetString(PyExc_ValueError, "bounds: expected 0 first, then strictly increasing (every class has a window)"); goto done; }
        if (get_buf(o_tab, &b[9], 8, lo[nb - 1] * nw, 0, "table") < 0) goto done;
        s.tab = b[9].buf;
        s.tlo = lo;
        s.jcls = b[11].buf;
        s.ncls = nb - 1;
        s.tspan = malloc((size_t)(2 * lo[nb - 1]) * sizeof(i32));
        if (!s.tspan) { PyErr_NoMemory(); goto done; }
        for (i64 r = 0; r < lo[nb - 1]; r++) {
            const u64 *w = s.tab + (size_t)r * (size_t)nw;
            i32 a = 0, e = (i32)nw - 1;
            while (a < e && !w[a]) a++;
            while (e > a && !w[e]) e--;
            s.tspan[2 * r] = a;
            s.tspan[2 * r + 1] = e;
        }
        u64 top = nodes % 64 ? ~(((u64)1 << (nodes % 64)) - 1) : 0; /* the last word's bits past the positions */
        i64 vol[64]; /* each class's positions: every row of a class holds as many */
        for (i64 c = 0; c < s.ncls; c++) {
            vol[c] = -1;
            for (i64 r = lo[c]; r < lo[c + 1]; r++) {
                const u64 *w = s.tab + (size_t)r * (size_t)nw;
                i64 bits = 0;
                for (i64 i = 0; i < nw; i++) bits += __builtin_popcountll(w[i]);
                if (w[nw - 1] & top) { PyErr_Format(PyExc_ValueError, "table: row %lld has positions past %lld", (long long)r, nodes); goto done; }
                if (vol[c] >= 0 && bits != vol[c]) { PyErr_Format(PyExc_ValueError, "table: the rows of class %lld hold %lld and %lld positions", (long long)c, (long long)vol[c], (long long)bits); goto done; }
                vol[c] = bits;
            }
        }
        const i64 *sz = b[3].buf;
        for (i64 j = 0; j < n; j++) {
            if (s.jcls[j] < 0 || s.jcls[j] >= s.ncls) { PyErr_Format(PyExc_ValueError, "classes: job position %lld has class %lld, expected 0..%lld", (long long)j, (long long)s.jcls[j], (long long)s.ncls - 1); goto done; }
            if (sz[j] != vol[s.jcls[j]]) { PyErr_Format(PyExc_ValueError, "size of job position %lld is %lld, its class's windows hold %lld positions", (long long)j, (long long)sz[j], (long long)vol[s.jcls[j]]); goto done; }
        }
    }
    s.log = o_log != Py_None ? b[7].buf : NULL;
    s.nlog = 0;
    s.n = n;
    s.nodes = nodes;
    s.submit = b[0].buf; s.run = b[1].buf; s.est = b[2].buf; s.size = b[3].buf;
    s.start = b[4].buf; s.end = b[5].buf;
    s.kind = kind;
    s.incremental = incremental;
    s.free = nodes;
    for (i64 j = 0; j < n; j++)
        if (s.size[j] < 1 || s.size[j] > nodes || (layout && layout != L_TABLE && (s.size[j] & (s.size[j] - 1)))) {
            PyErr_Format(PyExc_ValueError, "size of job position %lld is %lld, expected 1..%lld%s", (long long)j, (long long)s.size[j], nodes,
                         layout && layout != L_TABLE ? ", a power of two" : "");
            goto done;
        }
    s.layout = layout;
    if (layout) {
        s.dim = layout == L_TABLE ? 0 : log2_of(nodes);
        s.words = (nodes + 63) / 64;
        s.swords = layout == L_FREE && !recognise ? 0 : s.words;
        s.busy = calloc((size_t)s.words, sizeof(u64));
        s.sh = calloc((size_t)s.words, sizeof(u64));
        s.trial = calloc((size_t)s.words, sizeof(u64));
        s.pos = malloc((size_t)(n ? n : 1) * sizeof(i64));
        if (!s.busy || !s.sh || !s.trial || !s.pos) { PyErr_NoMemory(); goto done; }
        if (kind == K_EASY) {
            s.cls = calloc((size_t)s.dim + 1, sizeof(Bits));
            if (!s.cls) { PyErr_NoMemory(); goto done; }
            for (int k = 0; k <= s.dim; k++)
                if (bs_init(&s.cls[k], n) < 0) { PyErr_NoMemory(); goto done; }
            s.mwords = s.cls[0].words[0];
            s.mest = malloc((size_t)(s.dim + 1) * (size_t)s.mwords * sizeof(double));
            if (!s.mest) { PyErr_NoMemory(); goto done; }
            for (size_t i = 0; i < (size_t)(s.dim + 1) * (size_t)s.mwords; i++) s.mest[i] = INFINITY;
        }
        if (layout == L_FREE) {
            s.recsize = lists_bytes(&s);
            s.real = malloc((size_t)s.recsize);
            s.carve = malloc((size_t)nodes * sizeof(i32));
            s.g = calloc((size_t)(s.dim + 1) * (size_t)s.words, sizeof(u64));
            s.gw = malloc((size_t)(s.dim + 1) * (size_t)s.words * sizeof(i32));
            s.gn = malloc((size_t)(s.dim + 1) * sizeof(i64));
            if (recognise && s.dim >= RC_MIN_DIM) {
                s.rc = calloc(RC_SLOTS, sizeof(RecMemo));
                s.rcmask = malloc((size_t)RC_SLOTS * (size_t)s.words * sizeof(u64));
                if (!s.rc || !s.rcmask) { PyErr_NoMemory(); goto done; }
            }
            s.sh2 = malloc((size_t)s.words * sizeof(u64));
            s.snap = malloc((size_t)s.recsize);
            if (!s.real || !s.carve || !s.g || !s.gw || !s.gn || !s.snap || !s.sh2) { PyErr_NoMemory(); goto done; }
            lists_view(&s, s.real, &s.L);
            s.recognise = recognise;
            fl_reset(&s, &s.L);
            *s.L.held = 0;
        }
    }
    const i64 *rank = o_rank != Py_None ? b[6].buf : NULL;
    if (rank) {
        for (i64 j = 0; j < n; j++)
            if (rank[j] < 0 || rank[j] >= n) { PyErr_SetString(PyExc_ValueError, "rank: expected a permutation of 0..n-1"); goto done; }
    }
    s.waiting.n = nodes;
    s.waiting.t = calloc((size_t)nodes + 1, sizeof(i32));
    int qi = s.waiting.t ? q_init(&s.q, n, rank) : -1;
    if (qi == -2) { PyErr_SetString(PyExc_ValueError, "rank: expected a permutation of 0..n-1"); goto done; }
    if (qi < 0) { PyErr_NoMemory(); goto done; }
    s.grown = INFINITY;
    s.grown_end = -INFINITY;
    s.min_res = INFINITY;
    if (kind == K_CONSERVATIVE) {
        s.res = malloc((size_t)(n ? n : 1) * sizeof(double));
        s.starting = malloc((size_t)(n ? n : 1) * sizeof(i64));
        if (!s.res || !s.starting) { PyErr_NoMemory(); goto done; }
        for (i64 j = 0; j < n; j++) s.res[j] = NAN;
        if (layout) {
            size_t m = (size_t)(n ? n : 1);
            s.prio = malloc(m * sizeof(i64));
            s.cp = malloc(m * sizeof(i64));
            s.tp = malloc(m * sizeof(i64));
            s.tstamp = calloc(m, sizeof(i64));
            s.disp = calloc(m, 1);
            s.blocked = calloc(m, 1);
            if (!s.prio || !s.cp || !s.tp || !s.tstamp || !s.disp || !s.blocked) { PyErr_NoMemory(); goto done; }
        }
    }
    if (o_progress != Py_None) { /* (held by the arguments for the call) */
        s.progress = o_progress;
        s.ptick = s.n / 200 > 0 ? s.n / 200 : 1;
        s.pnext = s.ptick;
    }
    int st = simulate(&s);
    if (st < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    if (o_placed != Py_None) {
        i64 *placed = b[8].buf;
        for (i64 j = 0; j < n; j++) placed[j] = isnan(s.start[j]) ? -1 : s.pos[j];
    }
    if (layout == L_FREE && s.log)
        result = Py_BuildValue("(iLy#L)", st, (long long)(st ? s.err_job : -1), s.tried ? (const char *)s.tried : "", (Py_ssize_t)(s.ntried * (i64)sizeof(i64)), (long long)s.changes);
    else
        result = Py_BuildValue("(iLOL)", st, (long long)(st ? s.err_job : -1), Py_None, (long long)s.changes);
done:
    for (int i = 0; i < 12; i++)
        if (b[i].obj) PyBuffer_Release(&b[i]);
    free(s.heap.a); free(s.pending.t); free(s.pending.used);
    q_free(&s.q);
    free(s.waiting.t); free(s.running.a); free(s.res); free(s.starting); free(s.mv); free(s.pmv);
    free(s.prof.t); free(s.prof.v); free(s.load.t); free(s.load.v);
    free(s.busy); free(s.sh); free(s.trial); free(s.pos); free(s.tspan);
    free(s.mest);
    if (s.cls) {
        for (int k = 0; k <= s.dim; k++) bs_free(&s.cls[k]);
        free(s.cls);
    }
    free(s.real); free(s.carve); free(s.lsbuf); free(s.lslot); free(s.g); free(s.gw); free(s.gn); free(s.rc); free(s.rcmask); free(s.sh2); free(s.snap); free(s.tried);
    free(s.ev); free(s.ev2); free(s.ev3); free(s.st); free(s.mslot); free(s.fit_known); free(s.fit_yes); free(s.prio); free(s.cp); free(s.tp); free(s.tstamp); free(s.disp); free(s.blocked);
    return result;
}

/* the kernel's latest_end_by, for the tests (against easy.latest_end_by) */
static PyObject *py_latest_end_by(PyObject *self, PyObject *args) {
    double shadow, now;
    if (!PyArg_ParseTuple(args, "dd:latest_end_by", &shadow, &now)) return NULL;
    return PyFloat_FromDouble(latest_end_by(shadow, now));
}

static PyMethodDef methods[] = {
    {"run", py_run, METH_VARARGS, run_doc},
    {"latest_end_by", py_latest_end_by, METH_VARARGS, "latest_end_by(shadow, now): the kernel's easy.latest_end_by (for the tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ckernel", "Compiled counting-allocator simulation (see fastpath.py).", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ckernel(void) {
    subsets_fill();
    return PyModule_Create(&module);
}
