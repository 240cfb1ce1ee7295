/* Inputs and exact result checking of the peer benchmarks.
 *
 * Every input is a small integer, bounded per type, reduction and rank count so that the
 * reduction over all ranks is exactly representable: the check is an == per element and
 * #wrong is an exact count, whatever order a library adds in. */
#include <math.h>
#include <string.h>

#include "perf_common.h"

/* Largest integer each type holds exactly (for float types: the last of the contiguous run). */
static double exact_limit(perf_type type) {
  switch (type) {
    case PERF_INT8:
      return 127.0;
    case PERF_UINT8:
      return 255.0;
    case PERF_HALF:
      return 2048.0;
    case PERF_BFLOAT16:
      return 256.0;
    case PERF_FLOAT:
      return 16777216.0;
    default:
      return 9007199254740992.0;
  }
}

static uint32_t mix(size_t i) {
  uint32_t h = (uint32_t)i * 2654435761u;
  return h ^ (h >> 15);
}

/* How inputs are drawn for one (type, op, nranks); computed once per buffer, not per element. */
typedef struct {
  perf_op op;
  uint32_t span;  /* sum/avg/max/min: values in [0, span) */
  int prod_ranks; /* prod: ranks below this contribute 1 or 2, the others 1 */
} value_rule;

/* The reachable results stay strictly below exact_limit, which leaves the limit itself free as
 * a poison value for unsigned types. */
static value_rule make_rule(perf_type type, perf_op op, int nranks) {
  double limit = exact_limit(type) - 1.0;
  value_rule rule = {op, 64, 0};
  if (op == PERF_PROD) rule.prod_ranks = (int)floor(log2(limit));
  if (op == PERF_SUM || op == PERF_AVG) {
    double per_rank = floor(limit / nranks);
    if (per_rank < 63.0) rule.span = (uint32_t)per_rank + 1;
  }
  return rule;
}

/* Value of element i on rank r. */
static inline double input_value(const value_rule* rule, size_t i, int r) {
  if (rule->op == PERF_PROD)
    return r < rule->prod_ranks ? (double)(1 + ((mix(i) + (uint32_t)r) & 1u)) : 1.0;
  return (double)((mix(i) + 131u * (uint32_t)r) % rule->span);
}

static uint16_t half_from_int(double v) {
  uint32_t k = (uint32_t)v;
  if (k == 0) return 0;
  int e = 31 - __builtin_clz(k);
  uint32_t mant = e <= 10 ? (k << (10 - e)) - 1024u : (k >> (e - 10)) - 1024u;
  return (uint16_t)(((uint32_t)(e + 15) << 10) | mant);
}

static double half_to_double(uint16_t h) {
  int exp = (h >> 10) & 31;
  double mant = h & 1023;
  double v = exp == 0    ? ldexp(mant, -24)
             : exp == 31 ? (mant ? NAN : INFINITY)
                         : ldexp(1024.0 + mant, exp - 25);
  return (h & 0x8000) ? -v : v;
}

static uint16_t bf16_from_double(double v) {
  float f = (float)v;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16);
}

static double bf16_to_double(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static void store(void* buf, size_t i, perf_type type, double v) {
  switch (type) {
    case PERF_INT8:
      ((int8_t*)buf)[i] = (int8_t)v;
      break;
    case PERF_UINT8:
      ((uint8_t*)buf)[i] = (uint8_t)v;
      break;
    case PERF_INT32:
      ((int32_t*)buf)[i] = (int32_t)v;
      break;
    case PERF_UINT32:
      ((uint32_t*)buf)[i] = (uint32_t)v;
      break;
    case PERF_INT64:
      ((int64_t*)buf)[i] = (int64_t)v;
      break;
    case PERF_UINT64:
      ((uint64_t*)buf)[i] = (uint64_t)v;
      break;
    case PERF_HALF:
      ((uint16_t*)buf)[i] = half_from_int(v);
      break;
    case PERF_FLOAT:
      ((float*)buf)[i] = (float)v;
      break;
    case PERF_DOUBLE:
      ((double*)buf)[i] = v;
      break;
    case PERF_BFLOAT16:
      ((uint16_t*)buf)[i] = bf16_from_double(v);
      break;
    default:
      break;
  }
}

static double load(const void* buf, size_t i, perf_type type) {
  switch (type) {
    case PERF_INT8:
      return ((const int8_t*)buf)[i];
    case PERF_UINT8:
      return ((const uint8_t*)buf)[i];
    case PERF_INT32:
      return ((const int32_t*)buf)[i];
    case PERF_UINT32:
      return ((const uint32_t*)buf)[i];
    case PERF_INT64:
      return (double)((const int64_t*)buf)[i];
    case PERF_UINT64:
      return (double)((const uint64_t*)buf)[i];
    case PERF_HALF:
      return half_to_double(((const uint16_t*)buf)[i]);
    case PERF_FLOAT:
      return ((const float*)buf)[i];
    case PERF_DOUBLE:
      return ((const double*)buf)[i];
    case PERF_BFLOAT16:
      return bf16_to_double(((const uint16_t*)buf)[i]);
    default:
      return NAN;
  }
}

void perf_fill_input(void* buf, size_t count, perf_type type, perf_op op, int rank, int nranks) {
  /* The common case gets a direct loop: filling 64 MiB per call must not dominate a sweep. */
  value_rule rule = make_rule(type, op, nranks);
  if (type == PERF_FLOAT) {
    float* f = (float*)buf;
    for (size_t i = 0; i < count; i++) f[i] = (float)input_value(&rule, i, rank);
    return;
  }
  for (size_t i = 0; i < count; i++) store(buf, i, type, input_value(&rule, i, rank));
}

void perf_poison_output(void* buf, size_t count, perf_type type) {
  /* All bits set: NaN for every float type, -1 for signed integers (inputs are never negative)
   * and the largest value for unsigned ones (results stay below exact_limit). */
  memset(buf, 0xff, count * perf_type_size(type));
}

static double expected_value(const value_rule* rule, size_t i, perf_type type, int nranks) {
  perf_op op = rule->op;
  double acc = input_value(rule, i, 0);
  for (int r = 1; r < nranks; r++) {
    double v = input_value(rule, i, r);
    switch (op) {
      case PERF_PROD:
        acc *= v;
        break;
      case PERF_MAX:
        acc = v > acc ? v : acc;
        break;
      case PERF_MIN:
        acc = v < acc ? v : acc;
        break;
      default:
        acc += v;
        break;
    }
  }
  if (op == PERF_AVG) {
    int is_float =
        type == PERF_HALF || type == PERF_FLOAT || type == PERF_DOUBLE || type == PERF_BFLOAT16;
    acc = is_float ? acc / nranks : floor(acc / nranks);
  }
  return acc;
}

int64_t perf_count_wrong(const void* buf, size_t count, perf_type type, perf_op op, int nranks) {
  return perf_count_wrong_at(buf, count, 0, type, op, nranks);
}

void perf_fill_copy(void* buf, size_t count, size_t first, perf_type type, int source) {
  /* 64 values, exact in every type; 131 * source shifts the sequence per source. */
  for (size_t i = 0; i < count; i++)
    store(buf, i, type, (double)((mix(first + i) + 131u * (uint32_t)source + 7u) % 64u));
}

int64_t perf_count_wrong_at(const void* buf, size_t count, size_t first, perf_type type, perf_op op,
                            int nranks) {
  value_rule rule = make_rule(type, op, nranks);
  int64_t wrong = 0;
  if (type == PERF_FLOAT && op == PERF_SUM) {
    /* Checking 64 MiB per call must not dominate a sweep either. */
    const float* f = (const float*)buf;
    for (size_t i = 0; i < count; i++) {
      uint32_t h = mix(first + i), acc = 0;
      for (int r = 0; r < nranks; r++) acc += (h + 131u * (uint32_t)r) % rule.span;
      if (f[i] != (float)acc) wrong++;
    }
    return wrong;
  }
  for (size_t i = 0; i < count; i++) {
    /* Round the expectation through the element type, as the library's result is. */
    unsigned char slot[8];
    store(slot, 0, type, expected_value(&rule, first + i, type, nranks));
    if (load(buf, i, type) != load(slot, 0, type)) wrong++;
  }
  return wrong;
}
