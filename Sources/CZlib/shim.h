// zlib, the system's: zlib1g-dev on Debian and Ubuntu; part of the SDK on Darwin (libz).
#include <zlib.h>
