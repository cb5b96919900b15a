// tcp_cork: holding a TCP socket's transmission for the length of one write
// pass.
//
// Why: libpq 14–16's PQpipelineSync always flushes, so a write pass of N
// requests is N send() calls, and on TCP each one goes out as its own
// segment (libpq sets TCP_NODELAY): N transmits, and on loopback N wake-ups
// of the server's backend, each paid in the sender's system time. With
// TCP_CORK set for the pass, the kernel only queues what each send() hands
// it and transmits full segments when the pass uncorks: the wire sees what
// libpq 17's PQsendPipelineSync gives (one flush per loop turn) although
// the send() calls remain. Unix-domain sockets have no such option; libpq
// 17+ does not need it.
#pragma once

namespace pgpipe::detail {

/// Whether `fd` is a TCP socket (IPv4 or IPv6): the only kind TCP_CORK
/// applies to. False for a Unix-domain socket, a closed fd, or a system
/// without TCP_CORK.
bool corkable_socket(int fd) noexcept;

/// Sets (on) or clears TCP_CORK on `fd`. Clearing transmits what was held.
/// False where the system refused; a socket that was not corked is unchanged.
bool set_tcp_cork(int fd, bool on) noexcept;

}  // namespace pgpipe::detail
