/* A stand-in for OpenHaptics HDAPI (libHD.so), built by palpa's tests. It exports exactly
 * the functions palpa calls, with hdDefines.h's constants, and simulates a Touch: a
 * 1 kHz scheduler thread calls the scheduled callback once per servo tick, the stylus
 * tip moves along y (HDAPI's up) by the scripted press, and every frame's force, the
 * init/enable calls and the shutdown calls go to the record (record.h).
 *
 * The stylus is held tilted: its end effector turned 0.4 rad about HDAPI's x, then 0.3 rad
 * about its y (STANDIN_TILT below), as HD_CURRENT_TRANSFORM reports it.
 *
 * STANDIN_SCRIPT=hand: the tip follows record.h's person of `palpa devices check` (turned
 * into HDAPI's frame: x right, y up, z toward the user).
 * STANDIN_FAIL_INIT=1: hdInitDevice fails with HD_COMM_ERROR (device error 7).
 * STANDIN_FAIL_FRAME=N: servo frame N ends with an error, STANDIN_FAIL_CODE (hex; default
 * 0x0302, HD_COMM_ERROR, a scheduler error), device error 42. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "record.h"

typedef unsigned int HHD;
typedef unsigned int HDenum;
typedef unsigned int HDerror;
typedef struct {
    HDerror errorCode;
    int internalErrorCode;
    HHD hHD;
} HDErrorInfo;
typedef unsigned int (*HDSchedulerCallback)(void *);

#define HANDLE 1u
#define SCHEDULER_HANDLE 7ul
#define HD_INVALID_HANDLE 0xFFFFFFFFu

static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
static HDErrorInfo pending_error;

static void raise_error(HDerror code, int internal) {
    pthread_mutex_lock(&error_lock);
    if (pending_error.errorCode == 0) {
        pending_error.errorCode = code;
        pending_error.internalErrorCode = internal;
        pending_error.hHD = HANDLE;
    }
    pthread_mutex_unlock(&error_lock);
}

HDErrorInfo hdGetError(void) {
    pthread_mutex_lock(&error_lock);
    HDErrorInfo e = pending_error;
    memset(&pending_error, 0, sizeof pending_error);
    pthread_mutex_unlock(&error_lock);
    return e;
}

const char *hdGetErrorString(HDerror code) {
    switch (code) {
    case 0x0302: return "stand-in: communication with the device failed";
    case 0x0300: return "stand-in: device fault";
    case 0x0203: return "stand-in: the stylus moved faster than the device allows";
    default: return "stand-in: other error";
    }
}

static int initialised;
static int in_frame;
static long fail_frame = -1;
static HDerror fail_code = 0x0302;
static atomic_long frame;
static double position_mm[3];
static double force[3];

HHD hdInitDevice(const char *name) {
    standin_note("init %s", name ? name : "HD_DEFAULT_DEVICE");
    if (getenv("STANDIN_FAIL_INIT")) {
        raise_error(0x0302, 7);
        return HD_INVALID_HANDLE;
    }
    const char *fail = getenv("STANDIN_FAIL_FRAME");
    if (fail) fail_frame = atol(fail);
    const char *code = getenv("STANDIN_FAIL_CODE");
    if (code) fail_code = (HDerror)strtoul(code, NULL, 16);
    position_mm[1] = standin_hand_script() ? 10.0 : standin_height_mm(0.0);
    initialised = 1;
    return HANDLE;
}

static int valid(HHD h) {
    if (h != HANDLE || !initialised) {
        raise_error(0x0104, 0); /* HD_BAD_HANDLE */
        return 0;
    }
    return 1;
}

void hdMakeCurrentDevice(HHD h) { valid(h); }

void hdEnable(HDenum cap) { standin_note("enable %u", cap); }

void hdGetDoublev(HDenum name, double *v) {
    switch (name) {
    case 0x2050: /* HD_CURRENT_POSITION (mm), only inside a frame here */
        if (!in_frame) {
            raise_error(0x0102, 0);
            return;
        }
        memcpy(v, position_mm, sizeof position_mm);
        return;
    case 0x2052: { /* HD_CURRENT_TRANSFORM: column-major, Rx(0.4)·Ry(0.3), position (mm) */
        if (!in_frame) {
            raise_error(0x0102, 0);
            return;
        }
        const double a = 0.4, b = 0.3;
        const double ca = cos(a), sa = sin(a), cb = cos(b), sb = sin(b);
        const double m[16] = {cb, sa * sb, -ca * sb, 0,  0, ca, sa, 0,
                              sb, -sa * cb, ca * cb, 0,
                              position_mm[0], position_mm[1], position_mm[2], 1};
        memcpy(v, m, sizeof m);
        return;
    }
    case 0x2604: v[0] = 3.3; return; /* HD_NOMINAL_MAX_CONTINUOUS_FORCE (N) */
    case 0x2602: v[0] = 1.5; return; /* HD_NOMINAL_MAX_STIFFNESS (N/mm) */
    case 0x2551: {                   /* HD_USABLE_WORKSPACE_DIMENSIONS (mm) */
        const double box[6] = {-80, -50, -35, 80, 70, 35};
        memcpy(v, box, sizeof box);
        return;
    }
    default: raise_error(0x0100, (int)name); /* HD_INVALID_ENUM */
    }
}

void hdGetIntegerv(HDenum name, int *v) {
    if (name != 0x2000 || !in_frame) { /* HD_CURRENT_BUTTONS */
        raise_error(0x0100, (int)name);
        return;
    }
    *v = position_mm[1] < 0.0 ? 1 : 0;
}

const char *hdGetString(HDenum name) {
    switch (name) {
    case 0x2501: return "Touch stand-in"; /* HD_DEVICE_MODEL_TYPE */
    case 0x2504: return "STANDIN-TOUCH-1"; /* HD_DEVICE_SERIAL_NUMBER */
    default: return NULL;
    }
}

void hdSetDoublev(HDenum name, const double *v) {
    if (name != 0x2700) { /* HD_CURRENT_FORCE */
        raise_error(0x0100, (int)name);
        return;
    }
    if (!in_frame) {
        raise_error(0x0102, 0); /* HD_INVALID_OPERATION */
        return;
    }
    memcpy(force, v, sizeof force);
}

void hdBeginFrame(HHD h) {
    if (!valid(h)) return;
    if (in_frame) raise_error(0x0400, 0); /* HD_ILLEGAL_BEGIN */
    in_frame = 1;
}

void hdEndFrame(HHD h) {
    if (!valid(h)) return;
    if (!in_frame) raise_error(0x0401, 0); /* HD_ILLEGAL_END */
    in_frame = 0;
    long n = atomic_load(&frame);
    standin_note("force %.6f %.6f %.9g %.9g %.9g", n * 1e-3, position_mm[1], force[0],
                 force[1], force[2]);
    if (n == fail_frame) raise_error(fail_code, 42);
}

static HDSchedulerCallback callback;
static void *callback_data;
static atomic_int callback_done;
static atomic_int running;
static pthread_t servo_thread;

unsigned long hdScheduleAsynchronous(HDSchedulerCallback cb, void *data, unsigned short prio) {
    standin_note("schedule %u", prio);
    callback = cb;
    callback_data = data;
    atomic_store(&callback_done, 0);
    return SCHEDULER_HANDLE;
}

/* The servo loop: every 1 ms the device moves one step of the script, then the
 * scheduled callback runs once. */
static void *servo(void *unused) {
    (void)unused;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (atomic_load(&running)) {
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec += 1;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        long n = atomic_fetch_add(&frame, 1) + 1;
        if (standin_hand_script()) {
            /* HDAPI's frame to palpa's device frame and back: (x, −z, y) ↔ (x, z, −y). */
            /* Around the workspace box's centre (0, 0, 10) mm, near its faces. */
            const double f_device[3] = {force[0], -force[2], force[1]};
            const double reach_mm[3] = {75.0, 33.0, 55.0};
            double mm[3];
            standin_hand_mm(n * 1e-3, f_device, reach_mm, mm);
            position_mm[0] = mm[0];
            position_mm[1] = mm[2] + 10.0;
            position_mm[2] = -mm[1];
        } else {
            position_mm[1] = standin_height_mm(n * 1e-3);
        }
        if (callback && !atomic_load(&callback_done)) {
            if (callback(callback_data) == 0) atomic_store(&callback_done, 1);
        }
    }
    return NULL;
}

void hdStartScheduler(void) {
    standin_note("start_scheduler");
    atomic_store(&running, 1);
    pthread_create(&servo_thread, NULL, servo, NULL);
}

unsigned char hdWaitForCompletion(unsigned long handle, unsigned int code) {
    if (handle != SCHEDULER_HANDLE) return 0;
    if (code == 1) { /* HD_WAIT_INFINITE */
        while (!atomic_load(&callback_done)) usleep(1000);
        return 1;
    }
    return !atomic_load(&callback_done);
}

void hdStopScheduler(void) {
    if (atomic_exchange(&running, 0)) pthread_join(servo_thread, NULL);
    standin_note("stop_scheduler");
}

void hdUnschedule(unsigned long handle) {
    standin_note("unschedule %lu", handle);
    callback = NULL;
}

void hdDisableDevice(HHD h) {
    if (valid(h)) standin_note("disable_device %u", h);
    initialised = 0;
}
