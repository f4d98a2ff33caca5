/* event.c - timing events: CUDA events on the library's stream of the GPU current when the event was
 * made (the CUDA side's), or a monotonic host clock. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "internal.h"

struct cs_event {
    cs_device device;
    int gpu;                   /* CUDA: the GPU whose stream it marks; -1 on the CPU */
    int recorded;              /* 0 until the first cs_event_record */
    double host_ms;
    void *cuda_event;
};

cs_status cs_event_create(cs_event **out, cs_device device)
{
    if (device != CS_CPU && device != CS_CUDA) return cs_fail(CS_ERR_ARGUMENT, "device: unknown device %d", (int)device);
    if (device == CS_CUDA) {
        cs_status st = cs_cuda_ready();
        if (st) return st;
    }
    cs_event *e = calloc(1, sizeof *e);
    if (!e) return cs_fail(CS_ERR_OUT_OF_MEMORY, "host out of memory (event)");
    e->device = device;
    e->gpu = device == CS_CUDA ? cs_cuda_get_device() : -1;
    if (device == CS_CUDA) {
        cs_status st = cs_cuda_event_create(&e->cuda_event);
        if (st) {
            free(e);
            return st;
        }
    }
    *out = e;
    return CS_OK;
}

void cs_event_free(cs_event *e)
{
    if (!e) return;
    if (e->device == CS_CUDA) cs_cuda_event_free(e->cuda_event);
    free(e);
}

cs_status cs_event_record(cs_event *e)
{
    if (!e) return cs_fail(CS_ERR_ARGUMENT, "expected an event, got NULL");
    if (e->device == CS_CUDA) {
        int prev;
        cs_status st = cs_gpu_enter(e->gpu, &prev);
        if (st) return st;
        st = cs_cuda_event_record(e->cuda_event);
        cs_gpu_leave(prev);
        if (!st) e->recorded = 1;
        return st;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    e->host_ms = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
    e->recorded = 1;
    return CS_OK;
}

cs_status cs_event_elapsed(cs_event *start, cs_event *end, double *ms)
{
    if (!start || !end || !ms) return cs_fail(CS_ERR_ARGUMENT, "expected two events and a result, got NULL");
    if (start->device != end->device || start->gpu != end->gpu) {
        char a[32] = "cpu", b[32] = "cpu";
        if (start->gpu >= 0) snprintf(a, sizeof a, "cuda:%d", start->gpu);
        if (end->gpu >= 0) snprintf(b, sizeof b, "cuda:%d", end->gpu);
        return cs_fail(CS_ERR_ARGUMENT, "events of different devices: start on %s, end on %s", a, b);
    }
    /* an unrecorded event marks no point in time; CUDA would report a bare "invalid handle" */
    if (!start->recorded) return cs_fail(CS_ERR_ARGUMENT, "the start event was never recorded (record it first)");
    if (!end->recorded) return cs_fail(CS_ERR_ARGUMENT, "the end event was never recorded (record it first)");
    if (end->device == CS_CUDA) {
        int prev;
        cs_status st = cs_gpu_enter(end->gpu, &prev);
        if (st) return st;
        st = cs_cuda_event_elapsed(start->cuda_event, end->cuda_event, ms);
        cs_gpu_leave(prev);
        return st;
    }
    *ms = end->host_ms - start->host_ms;
    return CS_OK;
}
