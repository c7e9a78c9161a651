import Foundation
import PeerlogCapture
import PeerlogChannel
import PeerlogModel

/// `peerlog replay FILE --to HOST:PORT`: drives a `LiveReplayDriver` over a `SecureLink` to
/// a running peer, pacing batches at a multiple of the recorded speed, until the peer has
/// acknowledged every batch. Blocking; every wait is bounded by `timeout`.
package struct LiveReplayRun {
    /// What was sent, once the peer acknowledged it all.
    package struct Result: Sendable {
        /// Batches sent.
        package let batches: Int
        /// Receipts and envelopes in them.
        package let items: Int
        /// The peer's device.
        package let peer: DeviceID
    }

    /// The connection replayed (the one asked for, or the first that received batches).
    package let connection: UInt64
    let driver: LiveReplayDriver

    /// The recorded batches of `connection` (default: the first that received receipts or
    /// envelopes). Fails when there is no such connection or nothing to replay.
    package init(capture: CaptureFile, connection: UInt64?) throws {
        self.connection = try OfflineReplay.connection(in: capture, requested: connection)
        driver = try LiveReplayDriver(capture: capture, connection: self.connection)
    }

    /// Batches to send.
    package var batches: Int { driver.batches.count }

    /// Connects as `device`, then sends every batch: a batch is due `(t − t0) / speed` after
    /// the start (`speed` 0: as fast as the peer's credit allows). `connected` is called once
    /// the handshake is done, with the peer's device. Fails when the peer closes, or when
    /// nothing moves for `timeout` seconds.
    package func run(
        host: String, port: Int, device: LocalDevice, configuration: ChannelConfiguration, speed: Double,
        timeout: Double,
        connected: (DeviceID) -> Void = { _ in }
    ) throws -> Result {
        let link = try SecureLink(
            host: host, port: port, device: device, configuration: configuration, timeout: timeout)
        let peer = link.peer!.device
        connected(peer)
        for m in driver.start() { try link.send(m) }
        let started = Date()
        let firstTime = driver.batches[0].time
        var lastProgress = Date()
        while !driver.acknowledged {
            if let reason = link.closedReason {
                throw CaptureError(
                    offset: nil,
                    "the peer closed the connection after \(driver.sent) of \(driver.batches.count) batches: \(reason)")
            }
            if !driver.done, speed > 0 {
                let due = started.addingTimeInterval(
                    Double(driver.batches[driver.sent].time &- firstTime) / 1_000_000 / speed)
                if due > Date() {
                    try link.pump(until: due)
                    try handle(link)
                    continue
                }
            }
            if let messages = driver.next() {
                for m in messages { try link.send(m) }
                lastProgress = Date()
                continue
            }
            try link.pump(until: Date().addingTimeInterval(0.2))
            if try handle(link) { lastProgress = Date() }
            if Date().timeIntervalSince(lastProgress) > timeout {
                let waiting =
                    driver.unaccepted.isEmpty
                    ? "credit or acknowledgements"
                    : "acceptance of group \(driver.unaccepted.map(\.string).joined(separator: ", ")) (does the peer share it with this device?)"
                throw CaptureError(
                    offset: nil,
                    "no progress for \(timeout) s after \(driver.sent) of \(driver.batches.count) batches: waiting for \(waiting)"
                )
            }
        }
        link.close(reason: "replay finished")
        _ = try? link.pump(until: Date().addingTimeInterval(0.2))
        return Result(batches: driver.sent, items: driver.itemsSent, peer: peer)
    }

    /// Feeds what arrived to the driver and sends its replies; true if anything arrived.
    @discardableResult
    private func handle(_ link: SecureLink) throws -> Bool {
        let messages = link.take()
        for m in messages {
            for reply in try driver.receive(m) { try link.send(reply) }
        }
        return !messages.isEmpty
    }
}
