/* A stand-in for the Force Dimension SDK's DHD library (libdhd.so), built by palpa's
 * tests. It exports exactly the functions palpa calls (dhdc.h signatures) and simulates
 * an omega.3 (type 33) polled by the host: the tip moves along z (up) by the scripted
 * press in the time since it was opened, and every force written, the open/enable/close
 * calls go to the record (record.h).
 *
 * STANDIN_FAIL_OPEN=1: opening fails (dhdErrorGetLastStr says why).
 * STANDIN_FAIL_AFTER_READS=N: every dhdGetPosition after the N-th fails.
 * STANDIN_DHD_TYPE=T: dhdGetSystemType answers T (e.g. 104, a sigma.7: its handle turned
 * 0.5 rad about z, its gripper open 0.25 rad).
 * STANDIN_SCRIPT=hand: the tip follows record.h's person of `palpa devices check` around
 * the workspace centre of a sigma.7 (type 104) or the origin. */
#include <math.h>

#include "record.h"

static const char *last_error = "stand-in: no error";
static int open_id = -1;
static double opened_at;
static long reads;
static long fail_after = -1;
static double height_m;
static int system_type = 33; /* DHD_DEVICE_OMEGA3 */
static double last_force[3];
static double centre_mm[3];

int dhdOpenID(char id) {
    standin_note("open %d", id);
    if (getenv("STANDIN_FAIL_OPEN")) {
        last_error = "stand-in: no Force Dimension device found";
        return -1;
    }
    const char *fail = getenv("STANDIN_FAIL_AFTER_READS");
    if (fail) fail_after = atol(fail);
    const char *type = getenv("STANDIN_DHD_TYPE");
    if (type) system_type = atoi(type);
    if (system_type == 104) { /* sigma.7: CHAI3D reads it 10 mm back and 20 mm over */
        centre_mm[0] = 10.0;
        centre_mm[1] = -20.0;
    }
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
    double t = standin_now_s() - opened_at;
    if (standin_hand_script()) {
        /* 40 mm each way: the omega.3's and sigma.7's 43 mm half-box. */
        const double reach_mm[3] = {40.0, 40.0, 40.0};
        double mm[3];
        standin_hand_mm(t, last_force, reach_mm, mm);
        *px = (centre_mm[0] + mm[0]) * 1e-3;
        *py = (centre_mm[1] + mm[1]) * 1e-3;
        *pz = (centre_mm[2] + mm[2]) * 1e-3;
        height_m = *pz;
        return 0;
    }
    height_m = standin_height_mm(t) * 1e-3;
    *px = 0.0;
    *py = 0.0;
    *pz = height_m;
    return 0;
}

unsigned int dhdGetButtonMask(char id) { return valid(id) && height_m < 0.0 ? 1u : 0u; }

int dhdSetForce(double fx, double fy, double fz, char id) {
    if (!valid(id)) return -1;
    last_force[0] = fx;
    last_force[1] = fy;
    last_force[2] = fz;
    standin_note("force %.6f %.9g %.9g %.9g %.9g", standin_now_s() - opened_at,
                 height_m * 1e3, fx, fy, fz);
    return 0;
}

int dhdGetSystemType(char id) { return valid(id) ? system_type : -1; }

const char *dhdGetSystemName(char id) {
    if (!valid(id)) return NULL;
    return system_type == 104 ? "sigma.7 stand-in" : "omega.3 stand-in";
}

/* The handle turned 0.5 rad about z: rows of the rotation, columns the handle's axes. */
int dhdGetOrientationFrame(double matrix[3][3], char id) {
    if (!valid(id)) return -1;
    const double c = cos(0.5), s = sin(0.5);
    const double m[3][3] = {{c, -s, 0.0}, {s, c, 0.0}, {0.0, 0.0, 1.0}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) matrix[i][j] = m[i][j];
    return 0;
}

int dhdGetGripperAngleRad(double *angle, char id) {
    if (!valid(id)) return -1;
    *angle = 0.25;
    return 0;
}

const char *dhdErrorGetLastStr(void) { return last_error; }
