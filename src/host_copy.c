/* host_copy.c -- host memory copies split across a few CPU threads.
 *
 * One thread copies pageable memory at about 10 GB/s; host memory allows about 38 (the H200 machine, measured
 * in issue 13), and the staged transfers of transfer.c are bounded by this copy.  A small pool of worker
 * threads, started on first use, takes the parts of each copy; the caller copies one part itself and waits
 * for the rest.  Runs without the GIL; any number of threads may call it at once (their parts share the pool).
 *
 * Waking a sleeping thread costs tens of microseconds, as much as copying a part of a 1 MiB piece: workers and
 * the waiting caller spin for a moment (GR_COPY_SPIN_NS) before they sleep, so back-to-back copies (a streamed
 * array's chunks, a loop of calls) never wait for a wake-up.
 */
#include "ext.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Worker threads besides the caller, at most; fewer where the process may run on fewer CPUs (one CPU is the
 * caller's).  On the H200 machine (16 CPUs), 7 helpers against 4: 2^24 float32 host sum 1.89 ms against 2.24-2.50,
 * 2^28 31.9 ms against 38.6-42.2; 11 helpers are no faster than 7. */
#define GR_COPY_HELPERS 7
#define GR_COPY_SPLIT_FROM ((size_t)1 << 20)  /* smaller copies are one memcpy */
#define GR_COPY_ALIGN ((size_t)4096)          /* parts start on page boundaries */
#define GR_COPY_SPIN_NS 100000                /* spin this long for work, or for the parts, before sleeping */

typedef struct copy_batch {
    atomic_int pending; /* parts not yet copied (changed under g_lock, read without it while spinning) */
} copy_batch;

typedef struct copy_task {
    char *dst;
    const char *src;
    size_t bytes;
    int streamed; /* non-temporal stores (copy_part) */
    copy_batch *batch;
    struct copy_task *next;
} copy_task;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work = PTHREAD_COND_INITIALIZER; /* a task was queued */
static pthread_cond_t g_done = PTHREAD_COND_INITIALIZER; /* a batch's last part was copied */
static copy_task *g_head, *g_tail;
static int g_helpers = -1; /* workers running in this process; -1: not started yet */
static atomic_int g_queued;  /* tasks in the queue (read without g_lock while spinning) */

/* Copies of up to GR_COPY_STREAMED_MAX bytes use non-temporal stores: the lines go to memory, not into this
 * CPU's cache, where the DMA that reads them next would have to snoop them out (measured on the H200 machine:
 * a 4 MiB host sum 256 -> 162 us).  Larger copies (a streamed array's 8 MiB chunks) are faster with glibc's
 * memcpy (1 GiB: 26.9 ms against 42.6 ms with streamed stores). */
#define GR_COPY_STREAMED_MAX ((size_t)4 << 20)
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* 32-byte loads and streamed stores where the CPU has AVX (nearly every x86-64 server): one thread then copies
 * about as fast as glibc's memcpy, which a 16-byte loop does not. */
__attribute__((target("avx"))) static void
stream_copy_avx(char *dst, const char *src, size_t bytes)
{
    const size_t body = bytes & ~(size_t)127;
    for (size_t i = 0; i < body; i += 128) {
        const __m256i *from = (const __m256i *)(src + i);
        const __m256i a = _mm256_loadu_si256(from), b = _mm256_loadu_si256(from + 1);
        const __m256i c = _mm256_loadu_si256(from + 2), d = _mm256_loadu_si256(from + 3);
        _mm256_stream_si256((__m256i *)(dst + i), a);
        _mm256_stream_si256((__m256i *)(dst + i + 32), b);
        _mm256_stream_si256((__m256i *)(dst + i + 64), c);
        _mm256_stream_si256((__m256i *)(dst + i + 96), d);
    }
    _mm_sfence(); /* the streamed stores are visible before the copy counts as done (and before the DMA reads) */
    memcpy(dst + body, src + body, bytes - body);
}

static int
has_avx(void)
{
    static int known = -1;
    if (known < 0) known = __builtin_cpu_supports("avx") ? 1 : 0;
    return known;
}
#endif

static void
copy_part(char *dst, const char *src, size_t bytes, int streamed)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const size_t head = (size_t)(-(uintptr_t)dst & 31);
    if (streamed && bytes >= 4096 && has_avx()) {
        memcpy(dst, src, head);
        stream_copy_avx(dst + head, src + head, bytes - head);
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

static long long
now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Spin until *flag is nonzero (`want` 1) or zero (`want` 0), for at most GR_COPY_SPIN_NS.  1 if it came. */
static int
spin_for(atomic_int *flag, int want)
{
    const long long until = now_ns() + GR_COPY_SPIN_NS;
    for (int i = 0;; i++) {
        if ((atomic_load_explicit(flag, memory_order_acquire) != 0) == want) return 1;
        if ((i & 63) == 63 && now_ns() > until) return 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static void *
worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&g_lock);
    for (;;) {
        while (!g_head) {
            pthread_mutex_unlock(&g_lock);
            const int came = spin_for(&g_queued, 1);
            pthread_mutex_lock(&g_lock);
            if (!came && !g_head) pthread_cond_wait(&g_work, &g_lock);
        }
        copy_task *t = g_head;
        g_head = t->next;
        if (!g_head) g_tail = NULL;
        atomic_fetch_sub(&g_queued, 1);
        pthread_mutex_unlock(&g_lock);
        copy_part(t->dst, t->src, t->bytes, t->streamed);
        pthread_mutex_lock(&g_lock);
        if (atomic_fetch_sub(&t->batch->pending, 1) == 1) pthread_cond_broadcast(&g_done);
    }
    return NULL;
}

/* A forked child has none of the parent's threads: it starts its own pool when it needs one. */
static void
forget_pool_in_child(void)
{
    pthread_mutex_t fresh_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    g_lock = fresh_lock;
    g_work = fresh_cond;
    g_done = fresh_cond;
    g_head = g_tail = NULL;
    g_helpers = -1;
    atomic_store(&g_queued, 0);
}

/* The CPUs this process may run on (its affinity mask; the online CPUs where that is unknown). */
static int
usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

/* Called with g_lock held: start the workers (as many as the system gives; none is fine). */
static void
start_pool(void)
{
    static int at_fork_registered = 0;
    if (!at_fork_registered) at_fork_registered = pthread_atfork(NULL, NULL, forget_pool_in_child) == 0;
    g_helpers = 0;
    const int cpus = usable_cpus(), wanted = cpus - 1 < GR_COPY_HELPERS ? cpus - 1 : GR_COPY_HELPERS;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < wanted; i++) {
        pthread_t thread;
        if (pthread_create(&thread, &attr, worker, NULL) != 0) break;
        g_helpers++;
    }
    pthread_attr_destroy(&attr);
}

void
gr_host_copy(void *dst, const void *src, size_t bytes)
{
    const int streamed = bytes <= GR_COPY_STREAMED_MAX;
    if (bytes < GR_COPY_SPLIT_FROM) {
        copy_part(dst, src, bytes, streamed);
        return;
    }
    pthread_mutex_lock(&g_lock);
    if (g_helpers < 0) start_pool();
    const int helpers = g_helpers;
    pthread_mutex_unlock(&g_lock);
    const size_t parts = (size_t)helpers + 1;
    /* ceil(bytes / parts), up to a page: `parts` parts cover every byte (rounding bytes / parts down lost the
     * last bytes % parts whenever bytes / parts was a whole number of pages) */
    const size_t part = ((bytes + parts - 1) / parts + GR_COPY_ALIGN - 1) / GR_COPY_ALIGN * GR_COPY_ALIGN;
    copy_task tasks[GR_COPY_HELPERS];
    copy_batch batch;
    atomic_init(&batch.pending, 0);
    int queued = 0;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 1; i < parts && i * part < bytes; i++) { /* the caller keeps part 0 */
        copy_task *t = &tasks[i - 1];
        const size_t at = i * part;
        *t = (copy_task){(char *)dst + at, (const char *)src + at, bytes - at < part ? bytes - at : part, streamed,
                         &batch, NULL};
        if (g_tail) g_tail->next = t;
        else g_head = t;
        g_tail = t;
        queued++;
    }
    atomic_store(&batch.pending, queued);
    atomic_fetch_add(&g_queued, queued);
    if (queued) pthread_cond_broadcast(&g_work);
    pthread_mutex_unlock(&g_lock);
    copy_part(dst, src, part < bytes ? part : bytes, streamed);
    if (spin_for(&batch.pending, 0)) return; /* a worker touches neither `batch` nor its task after its decrement */
    pthread_mutex_lock(&g_lock);
    while (atomic_load(&batch.pending)) pthread_cond_wait(&g_done, &g_lock);
    pthread_mutex_unlock(&g_lock);
}
