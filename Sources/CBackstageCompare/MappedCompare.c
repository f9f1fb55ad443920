// A SIGBUS guard around the comparison of two mappings (see include/CBackstageCompare.h).
//
// The handler, installed once, jumps back to the comparison's start when the signal is a fault
// (raised by the kernel, not sent) on the comparing thread, during the comparison, and only then.
// For any other SIGBUS it puts back the action that was there before it, with that action's own
// flags and mask, and lets the signal reach it: a fault by returning (the access runs again), a sent
// signal by raising it again. The process then ends, or is handled, exactly as without the guard;
// the guard is gone from then on, and later comparisons read instead of mapping.
//
// Each comparison checks that the guard is still the installed action (an app may install its own
// after it) and unblocks SIGBUS on its thread while it reads: a fault on a thread that blocks it
// would otherwise end the process whatever the handler.

#define _GNU_SOURCE
#include "CBackstageCompare.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static struct sigaction previous_bus;
static int guard_installed;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
// The comparison's way back, set only while this thread reads the mappings. initial-exec: the
// handler must not allocate thread-local storage.
static __thread sigjmp_buf *volatile guarded_jump __attribute__((tls_model("initial-exec")));

static void on_bus(int signal, siginfo_t *info, void *context) {
    (void)context;
    sigjmp_buf *jump = guarded_jump;
    int fault = info != NULL && info->si_code > 0;
    if (jump != NULL && fault) {
        guarded_jump = NULL;
        siglongjmp(*jump, 1);
    }
    sigaction(SIGBUS, &previous_bus, NULL);
    if (!fault) raise(signal);
}

static void install_guard(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_bus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    // The action before first, so that no SIGBUS meets the guard before it knows where to send it.
    guard_installed = sigaction(SIGBUS, NULL, &previous_bus) == 0 && sigaction(SIGBUS, &action, NULL) == 0;
}

static int guard_in_place(void) {
    struct sigaction current;
    if (sigaction(SIGBUS, NULL, &current) != 0) return 0;
    return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_bus;
}

int backstage_guarded_compare(const void *a, const void *b, size_t length) {
    pthread_once(&guard_once, install_guard);
    if (!guard_installed || !guard_in_place()) return BACKSTAGE_COMPARE_UNGUARDED;
    volatile int answer = BACKSTAGE_COMPARE_FAULTED;
    sigjmp_buf jump;
    // Saves this thread's mask: the jump back restores it.
    if (sigsetjmp(jump, 1) == 0) {
        sigset_t bus, saved;
        sigemptyset(&bus);
        sigaddset(&bus, SIGBUS);
        pthread_sigmask(SIG_UNBLOCK, &bus, &saved);
        guarded_jump = &jump;
        atomic_signal_fence(memory_order_seq_cst);
        answer = memcmp(a, b, length) == 0;
        atomic_signal_fence(memory_order_seq_cst);
        guarded_jump = NULL;
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
    }
    return answer;
}
