import Foundation
import PeerlogChannel
import PeerlogModel
#if canImport(Glibc)
import Glibc
#endif

/// A blocking client connection over the secure channel, for one-shot tools (`LiveReplay`):
/// TCP with poll() deadlines around the pure `SecureChannel`. The daemon uses NIO instead.
public final class SecureLink {
    private let fd: Int32
    private var channel: SecureChannel
    /// The peer's certificate once the handshake is done.
    public private(set) var peer: DeviceCertificate?
    private var inbox = [[UInt8]]()
    /// Why the connection closed, once it has.
    public private(set) var closedReason: String?

    /// Connects and completes the handshake as `device` within `timeout` seconds.
    public init(host: String, port: Int, device: LocalDevice, configuration: ChannelConfiguration, timeout: Double) throws {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else { throw CaptureError(offset: nil, "cannot resolve \(host): \(String(cString: gai_strerror(rc)))") }
        defer { freeaddrinfo(list) }
        var fd: Int32 = -1
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let a = candidate {
            fd = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            if fd >= 0, connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { break }
            lastError = String(cString: strerror(errno))
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
            candidate = a.pointee.ai_next
        }
        guard fd >= 0 else { throw CaptureError(offset: nil, "cannot connect to \(host):\(port): \(lastError)") }
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        channel = SecureChannel(role: .initiator, device: device, configuration: configuration, authorize: { _ in .allow })
        try perform(channel.start())
        let deadline = Date().addingTimeInterval(timeout)
        while peer == nil {
            if let closedReason { throw CaptureError(offset: nil, "handshake with \(host):\(port) failed: \(closedReason)") }
            guard try pump(until: deadline) else { throw CaptureError(offset: nil, "handshake with \(host):\(port) timed out after \(timeout) s") }
        }
    }

    deinit { Glibc.close(fd) }

    /// Sends one application message.
    public func send(_ message: [UInt8]) throws {
        guard closedReason == nil else { throw CaptureError(offset: nil, "connection closed: \(closedReason!)") }
        try perform(try channel.send(message))
    }

    /// Messages received so far (and clears them).
    public func take() -> [[UInt8]] {
        defer { inbox = [] }
        return inbox
    }

    /// Waits for input until `deadline`; false when it passed with nothing read.
    @discardableResult
    public func pump(until deadline: Date) throws -> Bool {
        let ms = max(0, Int32(deadline.timeIntervalSinceNow * 1000))
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let n = poll(&p, 1, ms)
        guard n > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if got <= 0 {
            try perform(channel.inputClosed())
        } else {
            try perform(channel.receive(Array(buffer[..<got])))
        }
        return true
    }

    /// Sends a close record (the peer then closes).
    public func close(reason: String) {
        try? perform(channel.close(reason: reason))
    }

    private func perform(_ actions: [ChannelAction]) throws {
        for action in actions {
            switch action {
            case .write(let bytes):
                var offset = 0
                while offset < bytes.count {
                    let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                    guard n > 0 else { closedReason = "send failed: \(String(cString: strerror(errno)))"; return }
                    offset += n
                }
            case .established(let cert): peer = cert
            case .deliver(let m): inbox.append(m)
            case .closed(let reason): closedReason = "\(reason)"
            }
        }
    }
}
