import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A blocking client socket (TCP or a Unix socket) for one-shot tools: `SecureLink` (live
/// replay) and `ControlClient` (the daemon's control socket). Not part of the channel's pure
/// machine, which never does I/O; the daemon uses NIO instead.
public final class BlockingSocket {
    /// A failed call: which step, and the system's reason.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// The call that failed (`path`: a Unix socket path too long for `sockaddr_un`).
        public enum Step: Sendable { case resolve, socket, path, connect, send, receive }
        /// Where it failed.
        public let step: Step
        /// `strerror(3)` or `gai_strerror(3)` text, or what is wrong with the path.
        public let reason: String
        /// The reason alone: callers say what they were doing.
        public var description: String { reason }
    }

    private let fd: Int32

    /// Connects over TCP to the first of `host`'s addresses that answers (`TCP_NODELAY` on).
    public init(host: String, port: Int) throws {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw Failure(step: .resolve, reason: String(cString: gai_strerror(rc)))
        }
        defer { freeaddrinfo(list) }
        var fd: Int32 = -1
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let a = candidate {
            fd = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            if fd >= 0, connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { break }
            lastError = Self.lastError
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
            candidate = a.pointee.ai_next
        }
        guard fd >= 0 else { throw Failure(step: .connect, reason: lastError) }
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Connects to the Unix socket at `path`; every send and receive gives up after
    /// `timeoutSeconds`.
    public init(unixPath path: String, timeoutSeconds: Int) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(step: .socket, reason: Self.lastError) }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            Glibc.close(fd)
            throw Failure(step: .path, reason: "path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let reason = Self.lastError
            Glibc.close(fd)
            throw Failure(step: .connect, reason: reason)
        }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Sends every byte (without SIGPIPE).
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard n > 0 else { throw Failure(step: .send, reason: Self.lastError) }
            offset += n
        }
    }

    /// Waits until there is something to read (or the peer closed), at most until `deadline`;
    /// false when the deadline passed first.
    public func waitReadable(until deadline: Date) -> Bool {
        let ms = max(0, Int32(deadline.timeIntervalSinceNow * 1000))
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, ms) > 0
    }

    /// What arrived, up to `maxBytes`; empty once the peer closed.
    public func receive(maxBytes: Int = 65536) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maxBytes)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { throw Failure(step: .receive, reason: Self.lastError) }
        return Array(buffer[..<n])
    }

    private static var lastError: String { String(cString: strerror(errno)) }
}
