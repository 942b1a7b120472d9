/* A stand-in for the Force Dimension SDK's DHD library (libdhd.so), built by palpa's
 * tests. It exports exactly the functions palpa calls (dhdc.h signatures) and simulates
 * an omega.3 (type 33) polled by the host: the tip moves along z (up) by the scripted
 * press in the time since it was opened, and every force written, the open/enable/close
 * calls go to the record (record.h).
 *
 * STANDIN_FAIL_OPEN=1: opening fails (dhdErrorGetLastStr says why).
 * STANDIN_FAIL_AFTER_READS=N: every dhdGetPosition after the N-th fails. */
#include <math.h>

#include "record.h"

static const char *last_error = "stand-in: no error";
static int open_id = -1;
static double opened_at;
static long reads;
static long fail_after = -1;
static double height_m;

int dhdOpenID(char id) {
    standin_note("open %d", id);
    if (getenv("STANDIN_FAIL_OPEN")) {
        last_error = "stand-in: no Force Dimension device found";
        return -1;
    }
    const char *fail = getenv("STANDIN_FAIL_AFTER_READS");
    if (fail) fail_after = atol(fail);
    open_id = id;
    opened_at = standin_now_s();
    height_m = standin_height_mm(0.0) * 1e-3;
    return id;
}

int dhdOpen(void) { return dhdOpenID(0); }

static int valid(char id) {
    if (open_id < 0 || id != open_id) {
        last_error = "stand-in: device not open";
        return 0;
    }
    return 1;
}

int dhdClose(char id) {
    standin_note("close %d", id);
    if (!valid(id)) return -1;
    open_id = -1;
    return 0;
}

int dhdEnableForce(unsigned char on, char id) {
    standin_note("enable_force %u %d", on, id);
    return valid(id) ? 0 : -1;
}

int dhdGetPosition(double *px, double *py, double *pz, char id) {
    if (!valid(id)) return -1;
    reads += 1;
    if (fail_after >= 0 && reads > fail_after) {
        if (reads == fail_after + 1) standin_note("position_failed");
        last_error = "stand-in: communication error";
        return -1;
    }
    height_m = standin_height_mm(standin_now_s() - opened_at) * 1e-3;
    *px = 0.0;
    *py = 0.0;
    *pz = height_m;
    return 0;
}

unsigned int dhdGetButtonMask(char id) { return valid(id) && height_m < 0.0 ? 1u : 0u; }

int dhdSetForce(double fx, double fy, double fz, char id) {
    if (!valid(id)) return -1;
    standin_note("force %.6f %.9g %.9g %.9g %.9g", standin_now_s() - opened_at,
                 height_m * 1e3, fx, fy, fz);
    return 0;
}

int dhdGetSystemType(char id) { return valid(id) ? 33 : -1; } /* DHD_DEVICE_OMEGA3 */

const char *dhdGetSystemName(char id) { return valid(id) ? "omega.3 stand-in" : NULL; }

const char *dhdErrorGetLastStr(void) { return last_error; }
