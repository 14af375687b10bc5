// A deliberately faulty program for cpp/test/test_sanitizer_live.py: it shows that a build with
// -fsanitize=address,undefined (as `make asan` builds the C++ unit tests and both extensions)
// reports an out-of-bounds access and undefined behaviour, and that a clean run reports nothing.
// Built twice: as a program (argument "ok", "heap-overflow" or "signed-overflow") and, with
// -DHRI_CANARY_LIB, as a shared library whose hri_canary() is called from Python through ctypes
// (an instrumented library inside the uninstrumented interpreter, as the extensions are).
#include <climits>
#include <cstdio>
#include <cstring>

extern "C" int hri_canary(int what, int index) {
  if (what == 0) {  // element `index` of an 8-element heap array: index 8 is one past its end
    volatile int n = 8;  // a size the compiler cannot see: the access is ASan's to find
    int* a = new int[n];
    for (int i = 0; i < n; ++i) a[i] = i;
    volatile int* v = a;
    const int x = v[index];
    delete[] a;
    return x;
  }
  volatile int big = INT_MAX - 1;  // INT_MAX - 1 + index: index 2 overflows a signed int
  return big + index;
}

#ifndef HRI_CANARY_LIB
int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "ok";
  long long r = 0;
  if (std::strcmp(what, "ok") == 0) {
    r = static_cast<long long>(hri_canary(0, 7)) + hri_canary(1, 1);
  } else if (std::strcmp(what, "heap-overflow") == 0) {
    r = hri_canary(0, 8);
  } else if (std::strcmp(what, "signed-overflow") == 0) {
    r = hri_canary(1, 2);
  } else {
    std::printf("usage: sanitizer_canary ok|heap-overflow|signed-overflow\n");
    return 2;
  }
  std::printf("canary %s returned %lld\n", what, r);
  return 0;
}
#endif
