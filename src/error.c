/* error.c - thread-local last-error message and small dtype facts. */
#include <stdarg.h>
#include <stdio.h>
#include "internal.h"
#include "scalar.h"

static _Thread_local char last_error[1024];

cs_status cs_fail(cs_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

const char *cs_last_error(void) { return last_error; }

const char *cs_version(void) { return "0.1.0"; }

size_t cs_dtype_size(cs_dtype dtype)
{
    switch (dtype) {
    case CS_FLOAT32: case CS_INT32: return 4;
    case CS_FLOAT64: case CS_INT64: return 8;
    case CS_BOOL: return 1;
    case CS_FLOAT16: case CS_BFLOAT16: return 2;
    }
    return 0;
}

const char *cs_dtype_name(cs_dtype dtype)
{
    switch (dtype) {
    case CS_FLOAT32: return "float32";
    case CS_FLOAT64: return "float64";
    case CS_INT32: return "int32";
    case CS_INT64: return "int64";
    case CS_BOOL: return "bool";
    case CS_FLOAT16: return "float16";
    case CS_BFLOAT16: return "bfloat16";
    }
    return "?";
}

int cs_dtype_is_float(cs_dtype d) { return cs_is_float(d); }
