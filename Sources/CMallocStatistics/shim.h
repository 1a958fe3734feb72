// The C heap's own statistics, for `longlink-bench memory` (glibc's mallinfo2, Darwin's zones).
#if defined(__APPLE__)
#include <malloc/malloc.h>
#else
#include <malloc.h>
#endif
