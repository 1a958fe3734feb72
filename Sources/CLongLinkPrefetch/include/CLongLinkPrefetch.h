#ifndef C_LONGLINK_PREFETCH_H
#define C_LONGLINK_PREFETCH_H

/// Asks the CPU to start loading the cache line at `address` for writing, without waiting for it.
static inline void longlink_prefetch_for_write(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

#endif
