/* A CPU burner for loadgate-profile's tests: outer -> middle -> leaf_burn loops.
 *   burn wall SECONDS          burn for SECONDS of wall time
 *   burn spawn SECONDS         wait 0.3 s, fork a child that execs `burn child SECONDS`, wait for it, burn SECONDS more
 *   burn child SECONDS         child_work -> middle -> leaf_burn for SECONDS of wall time
 *   burn iters N               run outer() N times, print the CPU seconds it took
 *   burn cpu MS MODE           wait for a byte on stdin, burn MS ms of CPU (MODE: self | threads | fork), print
 *                              "done", wait for stdin to close
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

/* The local array on the stack makes gcc give the leaf a frame (with -fno-omit-frame-pointer), as real leaves
 * that spill have; gcc 12 gives a leaf without stack use none, even with -mno-omit-leaf-frame-pointer. */
__attribute__((noinline)) void leaf_burn(unsigned long n) {
    volatile unsigned long acc[2] = {0, 0};
    for (unsigned long i = 0; i < n; i++) acc[i & 1] += i * i;
    sink += acc[0] + acc[1];
}
__attribute__((noinline)) void middle(unsigned long n) { leaf_burn(n); sink++; }
__attribute__((noinline)) void outer(unsigned long n) { middle(n); sink++; }
__attribute__((noinline)) void child_work(unsigned long n) { middle(n); sink++; }

static double clock_s(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void burn_wall(double secs, void (*f)(unsigned long)) {
    double end = clock_s(CLOCK_MONOTONIC) + secs;
    while (clock_s(CLOCK_MONOTONIC) < end) f(20000);
}

static void burn_cpu(double secs, clockid_t c) {
    double end = clock_s(c) + secs;
    while (clock_s(c) < end) outer(20000);
}

static double thread_secs;
static void *thread_main(void *arg) {
    (void)arg;
    burn_cpu(thread_secs, CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    double secs = atof(argv[2]);
    if (!strcmp(argv[1], "wall")) {
        burn_wall(secs, outer);
    } else if (!strcmp(argv[1], "iters")) {
        long n = atol(argv[2]);
        double t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        for (long i = 0; i < n; i++) outer(20000);
        printf("%.4f\n", clock_s(CLOCK_PROCESS_CPUTIME_ID) - t0);
    } else if (!strcmp(argv[1], "child")) {
        burn_wall(secs, child_work);
    } else if (!strcmp(argv[1], "spawn")) {
        usleep(300000);
        pid_t p = fork();
        if (p == 0) {
            execl("/proc/self/exe", argv[0], "child", argv[2], (char *)NULL);
            _exit(127);
        }
        int st;
        waitpid(p, &st, 0);
        burn_wall(secs, outer);
    } else if (!strcmp(argv[1], "cpu") && argc >= 4) {
        char c;
        if (read(0, &c, 1) != 1) return 3;
        double s = secs / 1000.0;
        if (!strcmp(argv[3], "self")) {
            burn_cpu(s, CLOCK_THREAD_CPUTIME_ID);
        } else if (!strcmp(argv[3], "threads")) {
            pthread_t t[4];
            thread_secs = s / 4;
            for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, thread_main, NULL);
            for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
        } else {
            pid_t p = fork();
            if (p == 0) {
                burn_cpu(s, CLOCK_PROCESS_CPUTIME_ID);
                _exit(0);
            }
            int st;
            waitpid(p, &st, 0);
        }
        printf("done\n");
        fflush(stdout);
        while (read(0, &c, 1) > 0) {
        }
    } else {
        return 2;
    }
    return 0;
}
