// CHECK(cond) for the C++ unit-test programs (no framework): a failed check prints its place and
// counts in g_fail; main() returns non-zero when g_fail > 0. One translation unit per program.
#pragma once
#include <cstdio>

static int g_fail = 0;
#define CHECK(c)                                               \
  do {                                                         \
    if (!(c)) {                                                \
      ++g_fail;                                                \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
    }                                                          \
  } while (0)
