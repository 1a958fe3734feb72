// The Linux calls Swift's Glibc module does not expose: epoll, eventfd, and the GNU extensions accept4 and
// pthread_setname_np. `struct epoll_event` is packed on x86_64 and naturally aligned elsewhere, so Swift
// never touches its fields: the helpers below read and write them, and the event buffer is sized here.
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

// glibc declares accept4 and pthread_setname_np only under _GNU_SOURCE, which this module cannot define: the
// system headers it includes are shared with other modules and must read the same everywhere. So they are
// declared here under names of their own, bound to the C library's symbols, and <sys/socket.h> and
// <pthread.h> are not included (their declarations belong to Swift's Glibc module).
struct sockaddr;
extern int longlink_libc_accept4(int fd, struct sockaddr *address, void *length, int flags) __asm__("accept4");
extern unsigned long longlink_libc_pthread_self(void) __asm__("pthread_self");
extern int longlink_libc_pthread_setname_np(unsigned long thread, const char *name) __asm__("pthread_setname_np");

static inline size_t longlink_epoll_event_size(void) {
    return sizeof(struct epoll_event);
}

static inline int longlink_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

static inline int longlink_epoll_ctl(int epoll_fd, int operation, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event = {.events = events, .data = {.u64 = data}};
    return epoll_ctl(epoll_fd, operation, fd, &event);
}

static inline int longlink_epoll_wait(int epoll_fd, void *events, int capacity, int timeout) {
    return epoll_wait(epoll_fd, (struct epoll_event *)events, capacity, timeout);
}

static inline uint32_t longlink_epoll_event_events(const void *events, int index) {
    return ((const struct epoll_event *)events)[index].events;
}

static inline uint64_t longlink_epoll_event_data(const void *events, int index) {
    return ((const struct epoll_event *)events)[index].data.u64;
}

static inline int longlink_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

static inline int longlink_accept(int fd, int flags) {
    return longlink_libc_accept4(fd, NULL, NULL, flags);
}

static inline int longlink_set_current_thread_name(const char *name) {
    return longlink_libc_pthread_setname_np(longlink_libc_pthread_self(), name);
}
