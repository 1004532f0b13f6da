/* Preloaded (LD_PRELOAD) into every process of the Cognee end-to-end tests, so native code is held to the same
 * rule as Python code (sitecustomize.py): no connection and no name lookup to anything but loopback. Cognee's
 * stores are native libraries (Ladybug in C++, LanceDB in Rust) that open sockets without going through
 * Python's socket module; this catches them at libc's connect/sendto/sendmsg/getaddrinfo.
 *
 * A refused call fails (ECONNREFUSED / EAI_NONAME) and appends one line to $VIVARY_NETGUARD_LOG.
 * Built by the test with `cc -shared -fPIC -o netguard.so netguard.c -ldl`. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static void record(const char *what, const char *where) {
    const char *path = getenv("VIVARY_NETGUARD_LOG");
    if (path == NULL || *path == '\0') return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[600];
    int n = snprintf(line, sizeof line, "native %s %s (pid %d)\n", what, where, (int)getpid());
    if (n > 0) {
        ssize_t ignored = write(fd, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
        (void)ignored;
    }
    close(fd);
}

/* 1 when the address may be reached: loopback, or not an internet address at all (Unix sockets, netlink). */
static int allowed(const struct sockaddr *sa, char *shown, size_t size) {
    snprintf(shown, size, "?");
    if (sa == NULL) return 1;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, shown, (socklen_t)size);
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, shown, (socklen_t)size);
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return 1;
        return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
    }
    return 1;
}

int connect(int fd, const struct sockaddr *sa, socklen_t len) {
    static int (*real)(int, const struct sockaddr *, socklen_t);
    char shown[INET6_ADDRSTRLEN + 1];
    if (!allowed(sa, shown, sizeof shown)) {
        record("connect", shown);
        errno = ECONNREFUSED;
        return -1;
    }
    if (real == NULL) real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    return real(fd, sa, len);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *sa, socklen_t len) {
    static ssize_t (*real)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
    char shown[INET6_ADDRSTRLEN + 1];
    if (sa != NULL && !allowed(sa, shown, sizeof shown)) {
        record("sendto", shown);
        errno = ECONNREFUSED;
        return -1;
    }
    if (real == NULL)
        real = (ssize_t (*)(int, const void *, size_t, int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT,
                                                                                                      "sendto");
    return real(fd, buf, n, flags, sa, len);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    static ssize_t (*real)(int, const struct msghdr *, int);
    char shown[INET6_ADDRSTRLEN + 1];
    if (msg != NULL && msg->msg_name != NULL && !allowed((const struct sockaddr *)msg->msg_name, shown, sizeof shown)) {
        record("sendmsg", shown);
        errno = ECONNREFUSED;
        return -1;
    }
    if (real == NULL) real = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
    return real(fd, msg, flags);
}

/* Names: only "localhost" and numeric addresses (a numeric address needs no lookup; connect judges it). */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
    static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    if (node != NULL && strcasecmp(node, "localhost") != 0) {
        unsigned char buf[sizeof(struct in6_addr)];
        if (inet_pton(AF_INET, node, buf) != 1 && inet_pton(AF_INET6, node, buf) != 1) {
            char shown[300];
            snprintf(shown, sizeof shown, "%.255s", node);
            record("getaddrinfo", shown);
            return EAI_NONAME;
        }
    }
    if (real == NULL)
        real = (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))dlsym(
            RTLD_NEXT, "getaddrinfo");
    return real(node, service, hints, res);
}
