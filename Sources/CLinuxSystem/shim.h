// The Linux calls Swift's Glibc module does not expose: epoll, eventfd, and the GNU extensions accept4 and
// pthread_setname_np. `struct epoll_event` is packed on x86_64 and naturally aligned elsewhere, so Swift
// never touches its fields: the helpers below read and write them, and the event buffer is sized here.
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#ifndef __USE_GNU
// glibc declares these only under _GNU_SOURCE, which this module cannot define: the system headers it
// includes are shared with other modules, and their definitions must agree.
extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);
#endif

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

static inline int longlink_accept_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

static inline int longlink_set_current_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
