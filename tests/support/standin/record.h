/* The stand-ins' record: one line per call that matters, flushed at once, into the file
 * named by STANDIN_RECORD (nothing is recorded when it is unset). */
#ifndef STANDIN_RECORD_H
#define STANDIN_RECORD_H

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static FILE *standin_record;
static pthread_mutex_t standin_record_lock = PTHREAD_MUTEX_INITIALIZER;

static inline void standin_note(const char *fmt, ...) {
    pthread_mutex_lock(&standin_record_lock);
    if (!standin_record) {
        const char *path = getenv("STANDIN_RECORD");
        if (path) standin_record = fopen(path, "w");
    }
    if (standin_record) {
        va_list args;
        va_start(args, fmt);
        vfprintf(standin_record, fmt, args);
        va_end(args);
        fputc('\n', standin_record);
        fflush(standin_record);
    }
    pthread_mutex_unlock(&standin_record_lock);
}

static inline double standin_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The scripted stylus height (mm) at t (s): from 5 mm above the surface down to 4 mm
 * into it and back, once every 2 s, then from 7 s on held 4 mm deep (so the session
 * ends while pressing). */
static inline double standin_height_mm(double t) {
    const double pi = 3.14159265358979323846;
    if (t >= 7.0) return -4.0;
    return 5.0 - 9.0 * (1.0 - cos(2.0 * pi * t / 2.0)) / 2.0;
}

#endif
