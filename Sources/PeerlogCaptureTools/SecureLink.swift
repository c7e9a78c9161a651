import Foundation
import PeerlogCapture
import PeerlogChannel
import PeerlogModel

/// A blocking client connection over the secure channel, for one-shot tools (`LiveReplayRun`):
/// a `BlockingSocket` with poll() deadlines around the pure `SecureChannel`. The daemon uses
/// NIO instead.
package final class SecureLink {
    private let socket: BlockingSocket
    private var channel: SecureChannel
    /// The peer's certificate once the handshake is done.
    package private(set) var peer: DeviceCertificate?
    private var inbox = [[UInt8]]()
    /// Why the connection closed, once it has.
    package private(set) var closedReason: String?

    /// Connects and completes the handshake as `device` within `timeout` seconds.
    package init(
        host: String, port: Int, device: LocalDevice, configuration: ChannelConfiguration, timeout: Double
    ) throws {
        do { socket = try BlockingSocket(host: host, port: port) } catch let failure as BlockingSocket.Failure {
            throw CaptureError(
                offset: nil,
                failure.step == .resolve
                    ? "cannot resolve \(host): \(failure)" : "cannot connect to \(host):\(port): \(failure)")
        }
        channel = SecureChannel(
            role: .initiator, device: device, configuration: configuration, authorize: { _ in .allow })
        try perform(channel.start())
        let deadline = Date().addingTimeInterval(timeout)
        while peer == nil {
            if let closedReason {
                throw CaptureError(offset: nil, "handshake with \(host):\(port) failed: \(closedReason)")
            }
            guard try pump(until: deadline) else {
                throw CaptureError(offset: nil, "handshake with \(host):\(port) timed out after \(timeout) s")
            }
        }
    }

    /// Sends one application message.
    package func send(_ message: [UInt8]) throws {
        guard closedReason == nil else { throw CaptureError(offset: nil, "connection closed: \(closedReason!)") }
        try perform(try channel.send(message))
    }

    /// Messages received so far (and clears them).
    package func take() -> [[UInt8]] {
        defer { inbox = [] }
        return inbox
    }

    /// Waits for input until `deadline`; false when it passed with nothing read.
    @discardableResult
    package func pump(until deadline: Date) throws -> Bool {
        guard socket.waitReadable(until: deadline) else { return false }
        let got = (try? socket.receive()) ?? []
        if got.isEmpty {
            try perform(channel.inputClosed())
        } else {
            try perform(channel.receive(got))
        }
        return true
    }

    /// Sends a close record (the peer then closes).
    package func close(reason: String) {
        try? perform(channel.close(reason: reason))
    }

    private func perform(_ actions: [ChannelAction]) throws {
        for action in actions {
            switch action {
            case .write(let bytes):
                do { try socket.send(bytes) } catch {
                    closedReason = "send failed: \(error)"
                    return
                }
            case .established(let cert): peer = cert
            case .deliver(let m): inbox.append(m)
            case .closed(let reason): closedReason = "\(reason)"
            }
        }
    }
}
