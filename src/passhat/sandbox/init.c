/* The PID 1 of a confined program in the namespaces mode, in C: what src/passhat/sandbox/_init.py does
 * there, without the ~10 ms an interpreter takes to start (docs/design/021, "Cost").
 *
 * Run by `unshare ... --mount-proc` as PID 1 of fresh user, mount, PID, network and IPC namespaces, with
 * the words of passhat.sandbox.plan: `init namespaces STEP... -- PROGRAM ARG...`. Every path list was
 * computed by the harness; this program only executes the steps, always in this order:
 *
 *   cgroup DIR         join the cgroup: write 0 to DIR/tasks (this one thread, which is all of us:
 *                      single-threaded, the move of the calling thread skips the kernel's global
 *                      threadgroup lock and its RCU grace period, 5-12 ms, that cgroup.procs waits for)
 *   loopback           bring lo up
 *   address IP         add IP/32 or IP/128 to lo (netlink)
 *   sockets DIR        the folder of the forwarders' unix sockets, opened O_PATH before it is hidden
 *   listen IP PORT S   accept on IP:PORT, pass each connection on to the unix socket S in that folder
 *   writable DIR, keep PATH   opened O_PATH now: still reachable once covered
 *   hosts FILE         bound onto /etc/hosts
 *                      then the whole tree made read-only (mount_setattr, AT_RECURSIVE)
 *   cover DIR OPTS     an empty tmpfs with those options
 *   keep PATH          bound back read-only (recursively), made in its cover first
 *   writable DIR       bound back read-write
 *   late DIR OPTS      a tmpfs again (a hidden folder inside a kept one)
 *   seal DIR           made read-only (a cover's own tmpfs)
 *   cwd DIR            entered through the new mounts
 *   limit NAME VALUE   (fsize, nproc, data) set in the child, with uid N, then every capability dropped,
 *   uid N              no_new_privs, and the program executed
 *
 * Then this process stays PID 1: one epoll loop relays the forwarded connections (no thread per
 * connection; a 64 KiB buffer per direction, read only when empty, so a slow reader holds back its
 * writer) and reaps every child through a signalfd, which makes SIGCHLD one more readable descriptor in
 * the same loop (no handler, no self-pipe, no race between a check and a wait). When the program exits
 * we exit with its status (128 + N for signal N); the kernel then kills everything left in the namespace.
 *
 * Any failure before the program runs exits 125 with a line starting "passhat sandbox:" on stderr,
 * the same texts as _init.py: the program never runs unconfined.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define SETUP_FAILED 125
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442 /* the same number on every architecture Linux added it to at once */
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#define ATTR_RDONLY 0x1 /* MOUNT_ATTR_RDONLY */
#define CAP_VERSION_3 0x20080522
#define BUFFER (64 * 1024)

struct mount_attrs { uint64_t attr_set, attr_clr, propagation, userns_fd; }; /* struct mount_attr */

static void fail(int err, const char *format, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* "passhat sandbox: WHAT: strerror(err)" on stderr, exit 125: any set-up step that did not happen. */
static void fail(int err, const char *format, ...) {
    char what[8192];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    dprintf(2, "passhat sandbox: %s: %s\n", what, strerror(err));
    _exit(SETUP_FAILED);
}

static void spec_error(const char *what, const char *word) {
    dprintf(2, "passhat sandbox: spec: %s %s\n", what, word);
    _exit(SETUP_FAILED);
}

/* ---- the spec: words of argv, pointers into it ---- */

struct list { int n; char **items; };

struct spec {
    struct list cgroup, address, writable, keep, cover, late, seal, listen, limit, uid, sockets, hosts, cwd;
    int loopback;
    char **program;
};

static const struct { const char *word; int arity; size_t list; } STEPS[] = {
    {"cgroup", 1, offsetof(struct spec, cgroup)},     {"address", 1, offsetof(struct spec, address)},
    {"sockets", 1, offsetof(struct spec, sockets)},   {"listen", 3, offsetof(struct spec, listen)},
    {"writable", 1, offsetof(struct spec, writable)}, {"keep", 1, offsetof(struct spec, keep)},
    {"hosts", 1, offsetof(struct spec, hosts)},       {"cover", 2, offsetof(struct spec, cover)},
    {"late", 2, offsetof(struct spec, late)},         {"seal", 1, offsetof(struct spec, seal)},
    {"cwd", 1, offsetof(struct spec, cwd)},           {"limit", 2, offsetof(struct spec, limit)},
    {"uid", 1, offsetof(struct spec, uid)},
};

/* Each list holds its entries' words one after another (an entry of arity 3: items[3i .. 3i+2]). */
static void parse(int argc, char **argv, struct spec *spec) {
    memset(spec, 0, sizeof *spec);
    if (argc < 2 || strcmp(argv[1], "namespaces") != 0)
        spec_error("the C PID 1 runs the namespaces mode only, not", argc < 2 ? "nothing" : argv[1]);
    int i = 2;
    while (i < argc && strcmp(argv[i], "--") != 0) {
        if (strcmp(argv[i], "loopback") == 0) {
            spec->loopback = 1;
            i++;
            continue;
        }
        size_t step = 0;
        while (step < sizeof STEPS / sizeof STEPS[0] && strcmp(STEPS[step].word, argv[i]) != 0)
            step++;
        if (step == sizeof STEPS / sizeof STEPS[0])
            spec_error("unknown step", argv[i]);
        int arity = STEPS[step].arity;
        if (i + arity >= argc)
            spec_error("missing words after", argv[i]);
        struct list *list = (struct list *)((char *)spec + STEPS[step].list);
        if (list->items == NULL && (list->items = calloc((size_t)argc, sizeof(char *))) == NULL)
            fail(ENOMEM, "cannot read the spec");
        memcpy(list->items + list->n * arity, argv + i + 1, (size_t)arity * sizeof(char *));
        list->n++;
        i += 1 + arity;
    }
    if (i + 1 >= argc)
        spec_error("no program after", "--");
    if (spec->cwd.n != 1 || spec->sockets.n > 1 || spec->hosts.n > 1 || spec->uid.n > 1)
        spec_error("needs one cwd and at most one sockets, hosts and uid, in", "argv");
    if (spec->listen.n && !spec->sockets.n)
        spec_error("a listen step without", "sockets");
    spec->program = argv + i + 1;
}

/* ---- network ---- */

static void up_loopback(void) {
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strcpy(request.ifr_name, "lo");
    request.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || ioctl(s, SIOCSIFFLAGS, &request) != 0)
        fail(errno, "cannot bring lo up");
    close(s);
}

/* An address as text → its family and bytes (4 or 16); 0 when it is neither. */
static int parse_address(const char *text, unsigned char bytes[16]) {
    if (inet_pton(AF_INET, text, bytes) == 1)
        return AF_INET;
    if (inet_pton(AF_INET6, text, bytes) == 1)
        return AF_INET6;
    return 0;
}

static void put_attribute(struct nlmsghdr *message, unsigned short type, const void *data, size_t size) {
    struct rtattr *attribute = (struct rtattr *)((char *)message + NLMSG_ALIGN(message->nlmsg_len));
    attribute->rta_type = type;
    attribute->rta_len = (unsigned short)RTA_LENGTH(size);
    memcpy(RTA_DATA(attribute), data, size);
    message->nlmsg_len = NLMSG_ALIGN(message->nlmsg_len) + RTA_ALIGN(attribute->rta_len);
}

/* `ip addr add IP/32 (or /128) dev lo` through netlink (RTM_NEWADDR), for an allowed host's address. */
static void add_address(const char *ip) {
    unsigned char bytes[16];
    int family = parse_address(ip, bytes);
    if (!family)
        fail(EINVAL, "cannot add address %s to lo", ip);
    size_t size = family == AF_INET ? 4 : 16;
    union { struct nlmsghdr header; char space[256]; } request;
    memset(&request, 0, sizeof request);
    struct nlmsghdr *message = &request.header;
    message->nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
    message->nlmsg_type = RTM_NEWADDR;
    message->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
    message->nlmsg_seq = 1;
    struct ifaddrmsg *body = NLMSG_DATA(message);
    body->ifa_family = (unsigned char)family;
    body->ifa_prefixlen = (unsigned char)(size * 8);
    body->ifa_flags = family == AF_INET6 ? IFA_F_NODAD : 0; /* usable at once, not "tentative" */
    body->ifa_index = if_nametoindex("lo");
    put_attribute(message, IFA_LOCAL, bytes, size);
    put_attribute(message, IFA_ADDRESS, bytes, size);
    int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (s < 0 || sendto(s, message, message->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0)
        fail(errno, "cannot add address %s to lo", ip);
    union { struct nlmsghdr header; char space[4096]; } reply;
    ssize_t got = recv(s, &reply, sizeof reply, 0);
    if (got < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || reply.header.nlmsg_type != NLMSG_ERROR)
        fail(got < 0 ? errno : EPROTO, "cannot add address %s to lo", ip);
    int error = -((struct nlmsgerr *)NLMSG_DATA(&reply.header))->error;
    if (error != 0 && error != EEXIST) /* EEXIST: two allowed names with one address */
        fail(error, "cannot add address %s to lo", ip);
    close(s);
}

/* A listening socket on IP:PORT inside the namespace (IPv6: that family only). */
static int listen_on(const char *ip, const char *port_text) {
    union { struct sockaddr any; struct sockaddr_in v4; struct sockaddr_in6 v6; } where;
    memset(&where, 0, sizeof where);
    unsigned char bytes[16];
    int family = parse_address(ip, bytes);
    char *end;
    long port = strtol(port_text, &end, 10);
    const char *shown = family == AF_INET6 ? "cannot listen on [%s]:%s" : "cannot listen on %s:%s";
    if (!family || *end || port <= 0 || port > 65535)
        fail(EINVAL, shown, ip, port_text);
    socklen_t size;
    if (family == AF_INET) {
        where.v4.sin_family = AF_INET;
        where.v4.sin_port = htons((uint16_t)port);
        memcpy(&where.v4.sin_addr, bytes, 4);
        size = sizeof where.v4;
    } else {
        where.v6.sin6_family = AF_INET6;
        where.v6.sin6_port = htons((uint16_t)port);
        memcpy(&where.v6.sin6_addr, bytes, 16);
        size = sizeof where.v6;
    }
    int one = 1;
    int s = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0
        || (family == AF_INET6 && setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0)
        || bind(s, &where.any, size) != 0 || listen(s, 128) != 0)
        fail(errno, shown, ip, port_text);
    return s;
}

/* ---- mounts ---- */

static int set_mount_attr(const char *path, unsigned flags, uint64_t set, uint64_t clear) {
    struct mount_attrs attr = {.attr_set = set, .attr_clr = clear};
    return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attr, sizeof attr);
}

static void cover(const char *folder, const char *options) {
    if (mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0)
        fail(errno, "cannot cover %s with a tmpfs", folder);
}

/* mkdir -p: the last folder with `mode`, the ones above it 0777 (the umask applies), as os.makedirs. */
static int make_folders(const char *path, mode_t mode) {
    char copy[4096];
    if (strlen(path) >= sizeof copy)
        return errno = ENAMETOOLONG, -1;
    strcpy(copy, path);
    for (char *slash = strchr(copy + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(copy, 0777) != 0 && errno != EEXIST)
            return -1;
        *slash = '/';
    }
    if (mkdir(copy, mode) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(copy, &st) != 0)
        return -1;
    return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
}

/* What a bind onto `folder` needs there: a folder (or, for a file, its folder and an empty file). */
static void make_mount_point(const char *folder, int handle, mode_t mode) {
    struct stat st;
    if (stat(folder, &st) == 0)
        return;
    if (fstat(handle, &st) != 0)
        fail(errno, "cannot make %s in its cover", folder);
    if (S_ISDIR(st.st_mode)) {
        if (make_folders(folder, mode) != 0)
            fail(errno, "cannot make %s in its cover", folder);
        return;
    }
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", folder);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = '\0';
    int fd;
    if (make_folders(parent, 0755) != 0 || (fd = open(folder, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) < 0)
        fail(errno, "cannot make %s in its cover", folder);
    close(fd);
}

static void bind_handle(int handle, const char *folder, unsigned long flags) {
    char source[64];
    snprintf(source, sizeof source, "/proc/self/fd/%d", handle);
    if (mount(source, folder, NULL, MS_BIND | flags, NULL) != 0)
        fail(errno, "cannot bind %s", folder);
    close(handle);
}

static int *open_handles(const struct list *folders, int flags) {
    int *handles = calloc((size_t)folders->n + 1, sizeof(int));
    if (handles == NULL)
        fail(ENOMEM, "cannot open the folders");
    for (int i = 0; i < folders->n; i++)
        if ((handles[i] = open(folders->items[i], flags | O_CLOEXEC)) < 0)
            fail(errno, "cannot open %s", folders->items[i]);
    return handles;
}

static void confine_mounts(const struct spec *spec) {
    int *writable = open_handles(&spec->writable, O_PATH | O_DIRECTORY); /* still reachable once hidden */
    int *kept = open_handles(&spec->keep, O_PATH);
    if (spec->hosts.n && mount(spec->hosts.items[0], "/etc/hosts", NULL, MS_BIND, NULL) != 0)
        fail(errno, "cannot bind /etc/hosts");
    if (set_mount_attr("/", AT_RECURSIVE, ATTR_RDONLY, 0) != 0)
        fail(errno, "cannot make the file system read-only (mount_setattr)");
    for (int i = 0; i < spec->cover.n; i++)
        cover(spec->cover.items[2 * i], spec->cover.items[2 * i + 1]);
    for (int i = 0; i < spec->keep.n; i++) { /* the interpreter, the program: read-only as before */
        const char *folder = spec->keep.items[i];
        make_mount_point(folder, kept[i], 0755);
        bind_handle(kept[i], folder, MS_REC);
        if (set_mount_attr(folder, AT_RECURSIVE, ATTR_RDONLY, 0) != 0)
            fail(errno, "cannot make %s read-only", folder);
    }
    for (int i = 0; i < spec->writable.n; i++) {
        const char *folder = spec->writable.items[i];
        make_mount_point(folder, writable[i], 0700);
        bind_handle(writable[i], folder, 0);
        if (set_mount_attr(folder, 0, 0, ATTR_RDONLY) != 0)
            fail(errno, "cannot make %s writable", folder);
    }
    for (int i = 0; i < spec->late.n; i++) /* the run folder inside the agent's own (kept) working folder */
        cover(spec->late.items[2 * i], spec->late.items[2 * i + 1]);
    for (int i = 0; i < spec->seal.n; i++)
        if (set_mount_attr(spec->seal.items[i], 0, ATTR_RDONLY, 0) != 0)
            fail(errno, "cannot make %s read-only", spec->seal.items[i]);
    free(writable);
    free(kept);
}

/* ---- the program ---- */

/* Root without a single capability, now and after exec (the bounding set emptied first): above all
 * without CAP_SYS_PTRACE, which is what opens a non-dumpable process's /proc/<pid>/mem to root. */
static void drop_capabilities(void) {
    for (unsigned long cap = 0; prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; cap++)
        ;
    struct { uint32_t version; int pid; } header = {CAP_VERSION_3, 0};
    struct { uint32_t effective, permitted, inheritable; } data[2] = {{0, 0, 0}, {0, 0, 0}};
    if (syscall(SYS_capset, &header, data) != 0)
        fail(errno, "cannot drop capabilities (capset)");
}

static void set_limits(const struct list *limits) {
    static const struct { const char *name; int resource; } KNOWN[] = {
        {"fsize", RLIMIT_FSIZE}, {"nproc", RLIMIT_NPROC}, {"data", RLIMIT_DATA}};
    for (int i = 0; i < limits->n; i++) {
        const char *name = limits->items[2 * i], *text = limits->items[2 * i + 1];
        size_t k = 0;
        while (k < 3 && strcmp(KNOWN[k].name, name) != 0)
            k++;
        char *end;
        errno = 0;
        unsigned long long value = strtoull(text, &end, 10);
        if (k == 3 || *end || !*text || errno)
            fail(EINVAL, "cannot set the %s limit to %s", name, text);
        struct rlimit limit = {(rlim_t)value, (rlim_t)value};
        if (setrlimit(KNOWN[k].resource, &limit) != 0)
            fail(errno, "cannot set the %s limit to %s", name, text);
    }
}

static void run_program(const struct spec *spec, const sigset_t *mask) {
    if (sigprocmask(SIG_SETMASK, mask, NULL) != 0) /* a blocked SIGCHLD would stay blocked after exec */
        fail(errno, "cannot run %s", spec->program[0]);
    set_limits(&spec->limit);
    if (spec->uid.n) {
        uid_t uid = (uid_t)strtoul(spec->uid.items[0], NULL, 10);
        if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0)
            fail(errno, "cannot become uid %s", spec->uid.items[0]);
    }
    if (geteuid() == 0)
        drop_capabilities();
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        fail(errno, "cannot set no_new_privs");
    execvp(spec->program[0], spec->program);
    fail(errno, "cannot run %s", spec->program[0]);
}

/* ---- PID 1: relay and reap ---- */

enum kind { SIGNALS, LISTENER, SIDE };

struct tag { enum kind kind; int fd; void *owner; };

struct flow { char data[BUFFER]; size_t start, length; int done; }; /* one direction: side s → side 1-s */

struct connection {
    struct tag sides[2]; /* 0: the program's TCP connection, 1: the unix socket to the harness */
    struct flow flows[2];
    uint32_t watched[2];
    int closed;
    struct connection *next_closed;
};

struct listener { struct tag tag; char target[sizeof(((struct sockaddr_un *)0)->sun_path)]; };

static int loop_fd;
/* Closed in this round of events, freed after it: a later event of the round may still name them. */
static struct connection *closed_connections;

static void watch(struct connection *c, int side) {
    struct flow *in = &c->flows[side], *out = &c->flows[1 - side];
    uint32_t want = (!in->done && in->length == 0 ? EPOLLIN : 0) | (out->length ? EPOLLOUT : 0);
    if (want == c->watched[side])
        return;
    /* nothing wanted: out of the set, or a hang-up would be reported (level-triggered) again and again */
    struct epoll_event event = {.events = want, .data.ptr = &c->sides[side]};
    int op = !want ? EPOLL_CTL_DEL : c->watched[side] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    epoll_ctl(loop_fd, op, c->sides[side].fd, &event);
    c->watched[side] = want;
}

static void finish(struct flow *flow, int from, int to) {
    flow->done = 1;
    flow->length = 0;
    shutdown(to, SHUT_WR);
    shutdown(from, SHUT_RD);
}

/* Move what can move without blocking from side `s` to the other. */
static void pump(struct connection *c, int s) {
    struct flow *flow = &c->flows[s];
    int from = c->sides[s].fd, to = c->sides[1 - s].fd;
    while (!flow->done) {
        if (flow->length) {
            ssize_t sent = send(to, flow->data + flow->start, flow->length, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (sent < 0 && errno != EINTR)
                finish(flow, from, to);
            if (sent > 0) {
                flow->start += (size_t)sent;
                flow->length -= (size_t)sent;
            }
            continue;
        }
        ssize_t got = recv(from, flow->data, BUFFER, MSG_DONTWAIT);
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            finish(flow, from, to);
            return;
        }
        flow->start = 0;
        flow->length = (size_t)got;
    }
}

/* Both directions as far as they go, then what each side is watched for, or the end of the connection. */
static void relay(struct connection *c) {
    pump(c, 0);
    pump(c, 1);
    if (!c->flows[0].done || !c->flows[1].done) {
        watch(c, 0);
        watch(c, 1);
        return;
    }
    for (int side = 0; side < 2; side++)
        close(c->sides[side].fd); /* which also takes it out of the epoll set: no other copy of it exists */
    c->closed = 1;
    c->next_closed = closed_connections;
    closed_connections = c;
}

static void accept_all(struct listener *listener) {
    for (;;) {
        int client = accept4(listener->tag.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client < 0)
            return; /* EAGAIN: all taken; anything else: this connection is lost, the listener stays */
        int one = 1;
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* else small answers wait for an ACK */
        struct sockaddr_un target = {.sun_family = AF_UNIX};
        memcpy(target.sun_path, listener->target, sizeof target.sun_path);
        int upstream = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct connection *c = upstream < 0 ? NULL : calloc(1, sizeof *c);
        /* a unix connect does not wait: it succeeds, or the harness is not there (or not keeping up) */
        if (c == NULL || connect(upstream, (struct sockaddr *)&target, sizeof target) != 0) {
            close(client);
            if (upstream >= 0)
                close(upstream);
            free(c);
            continue;
        }
        for (int side = 0; side < 2; side++)
            c->sides[side] = (struct tag){SIDE, side ? upstream : client, c};
        relay(c);
    }
}

/* Reap every child that ended; the program's own status, when it is among them, is ours. */
static void reap(pid_t program) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        if (pid == program)
            _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    if (pid < 0 && errno == ECHILD)
        _exit(SETUP_FAILED); /* the program is gone and was never seen ending: cannot happen */
}

int main(int argc, char **argv) {
    struct spec spec;
    parse(argc, argv, &spec);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* the program cannot read our memory or descriptors */
    for (int i = 0; i < spec.cgroup.n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/tasks", spec.cgroup.items[i]); /* see the header: not cgroup.procs */
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
            fail(errno, "cannot join the cgroup %s", spec.cgroup.items[i]);
        close(fd);
    }
    if (spec.loopback)
        up_loopback();
    for (int i = 0; i < spec.address.n; i++)
        add_address(spec.address.items[i]);
    struct listener *listeners = calloc((size_t)spec.listen.n + 1, sizeof *listeners);
    if (listeners == NULL)
        fail(ENOMEM, "cannot listen");
    if (spec.sockets.n) {
        int sockets = open(spec.sockets.items[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (sockets < 0)
            fail(errno, "cannot open %s", spec.sockets.items[0]);
        for (int i = 0; i < spec.listen.n; i++) {
            char **rule = spec.listen.items + 3 * i;
            int length = snprintf(listeners[i].target, sizeof listeners[i].target, "/proc/self/fd/%d/%s",
                                  sockets, rule[2]);
            if (length < 0 || (size_t)length >= sizeof listeners[i].target)
                fail(ENAMETOOLONG, "cannot forward to %s", rule[2]);
            listeners[i].tag = (struct tag){LISTENER, listen_on(rule[0], rule[1]), &listeners[i]};
        }
    }
    confine_mounts(&spec);
    /* again, through the new mounts: the inherited working folder is on the read-only one */
    if (chdir(spec.cwd.items[0]) != 0)
        fail(errno, "cannot enter %s", spec.cwd.items[0]);
    sigset_t children, before;
    sigemptyset(&children);
    sigaddset(&children, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &children, &before) != 0) /* before the fork: no exit goes unseen */
        fail(errno, "cannot watch the program");
    int signals = signalfd(-1, &children, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signals < 0 || (loop_fd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        fail(errno, "cannot watch the program");
    struct tag signal_tag = {SIGNALS, signals, NULL};
    struct epoll_event event = {.events = EPOLLIN, .data.ptr = &signal_tag};
    if (epoll_ctl(loop_fd, EPOLL_CTL_ADD, signals, &event) != 0)
        fail(errno, "cannot watch the program");
    for (int i = 0; i < spec.listen.n; i++) {
        event = (struct epoll_event){.events = EPOLLIN, .data.ptr = &listeners[i].tag};
        if (epoll_ctl(loop_fd, EPOLL_CTL_ADD, listeners[i].tag.fd, &event) != 0)
            fail(errno, "cannot watch the program");
    }
    pid_t program = fork();
    if (program < 0)
        fail(errno, "cannot fork");
    if (program == 0)
        run_program(&spec, &before);
    struct epoll_event ready[64];
    for (;;) {
        int n = epoll_wait(loop_fd, ready, 64, -1);
        for (int i = 0; i < n; i++) {
            struct tag *tag = ready[i].data.ptr;
            if (tag->kind == SIGNALS) {
                struct signalfd_siginfo info;
                while (read(signals, &info, sizeof info) == sizeof info)
                    ;
                reap(program);
            } else if (tag->kind == LISTENER) {
                accept_all(tag->owner);
            } else if (!((struct connection *)tag->owner)->closed) {
                relay(tag->owner);
            }
        }
        while (closed_connections) {
            struct connection *c = closed_connections;
            closed_connections = c->next_closed;
            free(c);
        }
    }
}
