// SQLite, the system's: libsqlite3-dev on Debian and Ubuntu; part of the SDK on Darwin (libsqlite3),
// for LongLinkServer's durable store. `SQLITE_TRANSIENT` is a macro over a cast, which Swift cannot
// import: the inline function below gives it a Swift-callable name, and nothing more.
#ifndef LONGLINK_CSQLITE_SHIM_H
#define LONGLINK_CSQLITE_SHIM_H

#include <sqlite3.h>

/// The destructor that tells SQLite to copy a bound value before the call returns.
static inline sqlite3_destructor_type longlink_sqlite3_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif
