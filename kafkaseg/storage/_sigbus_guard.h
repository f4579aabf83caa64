/* SIGBUS guard for read-only mappings of segment files that a live broker may truncate.
 *
 * Reading a page of a MAP_SHARED file mapping that lies wholly past the file's current end raises SIGBUS, whose
 * default action kills the process. A broker truncates segments (follower truncation, recovery, the trim of a
 * preallocated file at roll: UnifiedLog.truncateTo, LogSegment.truncateTo, FileRecords.truncateTo), so a reader
 * of a live data dir must survive that. While a guarded read runs, this handler answers a SIGBUS inside a
 * registered mapping by mapping a private zero page over the faulting page (MAP_FIXED) and returning, so the
 * access repeats and reads zeros; it marks the mapping as faulted. Whatever the read computed is then discarded
 * by the caller, which rereads the range with pread (and so sees the file as it now is). No longjmp: the faulting
 * code, whichever library it is in, just sees zeros, which every decoder here handles as corrupt input.
 *
 * A SIGBUS outside the registered mappings goes to the handler that was installed before (faulthandler, or the
 * default action): the guard is installed only while at least one guarded read runs (kseg_guard_enter/leave) and
 * the previous handler is put back afterwards if nobody replaced ours meanwhile.
 */
#ifndef KAFKASEG_SIGBUS_GUARD_H
#define KAFKASEG_SIGBUS_GUARD_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_POPULATE /* Linux only: elsewhere pages fault in on first touch */
#define MAP_POPULATE 0
#endif
#ifndef MADV_SEQUENTIAL
#define MADV_SEQUENTIAL 0
#endif

#define KSEG_GUARD_SLOTS 256

typedef struct {
    volatile uintptr_t start;
    volatile uintptr_t end;
    volatile sig_atomic_t faulted;
} kseg_guard_slot;

static kseg_guard_slot kseg_slots[KSEG_GUARD_SLOTS];
static struct sigaction kseg_previous;
static pthread_mutex_t kseg_lock = PTHREAD_MUTEX_INITIALIZER;
static int kseg_users = 0;
static uintptr_t kseg_page_size = 4096;

static void kseg_sigbus_handler(int sig, siginfo_t *info, void *context) {
    uintptr_t addr = (uintptr_t)info->si_addr;
    int i;
    if (info->si_code > 0) { /* a fault (BUS_ADRERR...), not a kill(2) */
        for (i = 0; i < KSEG_GUARD_SLOTS; i++) {
            uintptr_t start = kseg_slots[i].start, end = kseg_slots[i].end;
            if (start != 0 && addr >= start && addr < end) {
                void *page = (void *)(addr & ~(kseg_page_size - 1));
                if (mmap(page, kseg_page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
                    != MAP_FAILED) {
                    kseg_slots[i].faulted = 1;
                    return;
                }
                break;
            }
        }
    }
    /* not ours: as if the guard were not installed (never chaining to itself: that would spin forever) */
    if (kseg_previous.sa_flags & SA_SIGINFO) {
        if (kseg_previous.sa_sigaction != NULL && kseg_previous.sa_sigaction != kseg_sigbus_handler) {
            kseg_previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (kseg_previous.sa_handler != SIG_DFL && kseg_previous.sa_handler != SIG_IGN) {
        kseg_previous.sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL); /* the faulting access repeats and takes the default action */
}

/* Install the handler (first user) and count this user; 0 on success. */
static int kseg_guard_enter(void) {
    int rc = 0;
    pthread_mutex_lock(&kseg_lock);
    if (kseg_users == 0) {
        struct sigaction action, replaced;
        long page = sysconf(_SC_PAGESIZE);
        if (page > 0) kseg_page_size = (uintptr_t)page;
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = kseg_sigbus_handler;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        rc = sigaction(SIGBUS, &action, &replaced);
        /* Ours may still be installed (someone put it back after we left): then keep the handler saved before. */
        if (rc == 0 && !((replaced.sa_flags & SA_SIGINFO) && replaced.sa_sigaction == kseg_sigbus_handler))
            kseg_previous = replaced;
    }
    if (rc == 0) kseg_users++;
    pthread_mutex_unlock(&kseg_lock);
    return rc;
}

/* The last user out puts the previous handler back, unless someone replaced ours meanwhile. */
static void kseg_guard_leave(void) {
    pthread_mutex_lock(&kseg_lock);
    if (kseg_users > 0 && --kseg_users == 0) {
        struct sigaction current;
        if (sigaction(SIGBUS, NULL, &current) == 0 && (current.sa_flags & SA_SIGINFO)
            && current.sa_sigaction == kseg_sigbus_handler) {
            sigaction(SIGBUS, &kseg_previous, NULL);
        }
    }
    pthread_mutex_unlock(&kseg_lock);
}

/* Register [start, end) as guarded; the slot index, or -1 when all slots are taken. */
static int kseg_guard_register(uintptr_t start, uintptr_t end) {
    int i, slot = -1;
    pthread_mutex_lock(&kseg_lock);
    for (i = 0; i < KSEG_GUARD_SLOTS; i++) {
        if (kseg_slots[i].start == 0) {
            kseg_slots[i].faulted = 0;
            kseg_slots[i].end = end;
            kseg_slots[i].start = start;
            slot = i;
            break;
        }
    }
    pthread_mutex_unlock(&kseg_lock);
    return slot;
}

static int kseg_guard_faulted(int slot) { return slot >= 0 && kseg_slots[slot].faulted; }

static void kseg_guard_unregister(int slot) {
    if (slot < 0) return;
    pthread_mutex_lock(&kseg_lock);
    kseg_slots[slot].start = 0;
    kseg_slots[slot].end = 0;
    kseg_slots[slot].faulted = 0;
    pthread_mutex_unlock(&kseg_lock);
}

#endif
