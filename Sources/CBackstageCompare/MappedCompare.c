// A SIGBUS guard around the comparison of two mappings (see include/CBackstageCompare.h).
//
// The handler, installed once, jumps back to the comparison's start when the fault is the
// comparing thread's, during the comparison, and only then. A SIGBUS anywhere else goes to the
// handler that was installed before, or, when there was none, to the default action: the handler
// restores it and returns, the faulting access runs again and ends the process as it would have
// without the guard.

#define _GNU_SOURCE
#include "CBackstageCompare.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

static struct sigaction previous_bus;
static int guard_installed;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
// The comparison's way back, set only while this thread reads the mappings. initial-exec: the
// handler must not allocate thread-local storage.
static __thread sigjmp_buf *volatile guarded_jump __attribute__((tls_model("initial-exec")));

static void on_bus(int signal, siginfo_t *info, void *context) {
    sigjmp_buf *jump = guarded_jump;
    if (jump != NULL) {
        guarded_jump = NULL;
        siglongjmp(*jump, 1);
    }
    if (previous_bus.sa_flags & SA_SIGINFO) {
        previous_bus.sa_sigaction(signal, info, context);
    } else if (previous_bus.sa_handler != SIG_DFL && previous_bus.sa_handler != SIG_IGN) {
        previous_bus.sa_handler(signal);
    } else {
        // A fault's SIGBUS cannot be ignored: back to the default, which the access meets again.
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        sigaction(SIGBUS, &fallback, NULL);
    }
}

static void install_guard(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_bus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    guard_installed = sigaction(SIGBUS, &action, &previous_bus) == 0;
}

int backstage_guarded_compare(const void *a, const void *b, size_t length) {
    pthread_once(&guard_once, install_guard);
    if (!guard_installed) return BACKSTAGE_COMPARE_UNGUARDED;
    volatile int answer = BACKSTAGE_COMPARE_FAULTED;
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1) == 0) {
        guarded_jump = &jump;
        answer = memcmp(a, b, length) == 0;
        guarded_jump = NULL;
    }
    return answer;
}
