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

/* STANDIN_SCRIPT=hand: the person of `palpa devices check` (device frame, mm, z up):
 * still in the middle for 0.8 s, then for each of +x, −x, +y, −y, +z, −z out to `reach_mm`
 * along that axis and back (0.5 s each way) and still again for 0.8 s; then held in the
 * middle, where the fingers give way to a force by 1 mm per 0.3 N (a 300 N/m hand). */
static inline int standin_hand_script(void) {
    const char *script = getenv("STANDIN_SCRIPT");
    return script && script[0] == 'h';
}

static inline void standin_hand_mm(double t, const double force[3], const double reach_mm[3],
                                   double out_mm[3]) {
    const double pi = 3.14159265358979323846;
    const double still = 0.8, leg = 0.5, move = still + 2.0 * leg;
    out_mm[0] = out_mm[1] = out_mm[2] = 0.0;
    double s = t - still;
    if (s >= 0.0 && s < 6.0 * move) {
        int k = (int)(s / move);
        double u = s - k * move;
        double x = u < leg ? u / leg : (u < 2.0 * leg ? 2.0 - u / leg : 0.0);
        double reach = reach_mm[k / 2] * (0.5 - 0.5 * cos(pi * x));
        out_mm[k / 2] = (k % 2 == 0 ? 1.0 : -1.0) * reach;
    }
    for (int i = 0; i < 3; i++) out_mm[i] += force[i] * 1000.0 / 300.0;
}

#endif
