import Foundation
import PeerlogCapture
import PeerlogEngine
import PeerlogModel
import PeerlogSync
import Synchronization

/// `peerlog replay FILE --into HOME`: feeds one connection's recorded inbound messages into a
/// fresh sync session and replica, in file order, with the replica's clock set to each
/// record's time, so the same capture always yields the same state.
package struct OfflineReplay {
    /// One group of the replica after a replay.
    package struct GroupResult: Sendable {
        /// The group's id.
        package let group: GroupID
        /// The highest committed sequence number (the group vector's `committed`).
        package let committed: UInt64
        /// Entries in the tentative view past the committed ones.
        package let tentative: UInt64
        /// The committed view's state hash (§12), 32 bytes (`peerlog state-hash` prints it in hex).
        package let committedHash: [UInt8]
        /// The tentative view's state hash (§12), 32 bytes.
        package let tentativeHash: [UInt8]
    }

    /// What a replay fed and the state it left (docs/TOOLS.md "Offline, into a fresh home").
    package struct Result: Sendable {
        /// The connection replayed.
        package let connection: UInt64
        /// The connection's peer device, whose certificate the session was opened with.
        package let peer: DeviceID
        /// Inbound `message` records fed to the session.
        package let messagesFed: Int
        /// Items the session's ingests reported as stored, duplicate or queued.
        package let itemsFed: Int
        /// Protocol errors the session reported (the original receiver may have seen the same).
        package let sessionErrors: [String]
        /// Every group the replica holds afterwards.
        package let groups: [GroupResult]
    }

    /// Picks the connection: the one asked for, else the first with inbound batches.
    package static func connection(in capture: CaptureFile, requested: UInt64?) throws -> UInt64 {
        if let requested {
            guard capture.connections.contains(requested) else {
                throw CaptureError(
                    .notReplayable, offset: nil,
                    "no connection \(requested) in the capture (it has \(capture.connections.map(String.init).joined(separator: ", ")))"
                )
            }
            return requested
        }
        let batches: Set<String> = ["receipts", "envelopes", "commits"]
        for c in capture.connections {
            let received = capture.records.contains { r in
                r.connection == c && r.kind == .message && r.direction == .inbound
                    && RecordView.messageType(r.data).map(batches.contains) == true
            }
            if received { return c }
        }
        throw CaptureError(
            .notReplayable, offset: nil, "no connection in the capture received any receipts or envelopes")
    }

    /// The peer's certificate: from the `opened` record, else from a receipt it authored.
    static func peerCertificate(_ capture: CaptureFile, connection: UInt64) throws -> DeviceCertificate {
        let records = capture.records.filter { $0.connection == connection }
        if let opened = records.first(where: { $0.kind == .opened }) {
            return try DeviceCertificate(encoded: opened.data)
        }
        guard let peer = records.first?.peer else {
            throw CaptureError(.notReplayable, offset: nil, "connection \(connection) has no records")
        }
        for r in records where r.kind == .message {
            if let m = try? SyncMessage.decode(r.data, limits: SyncLimits()) {
                for bytes in Self.receiptItems(m) {
                    if let receipt = try? Receipt(encoded: bytes), receipt.author == peer { return receipt.certificate }
                }
            }
        }
        throw CaptureError(
            .notReplayable, offset: nil,
            "the capture started after connection \(connection) opened and holds no receipt by its peer \(peer): the peer's certificate is unknown, so its session cannot be replayed"
        )
    }

    static func receiptItems(_ m: SyncMessage) -> [[UInt8]] {
        switch m {
        case .receipts(_, let items): items
        case .commits(_, let receipts, _): receipts
        default: []
        }
    }

    /// Replays one connection (picked as `connection(in:requested:)` does) into `replica` (§17.4): a `SyncSession`
    /// as `device`, with the peer's certificate from the `opened` record or a receipt it authored, is fed each
    /// inbound message in file order with `clock` set to the record's time in milliseconds; what it sends is
    /// dropped. For a reproducible result `replica` must hold no groups and take its time from `clock`.
    /// - Throws: `CaptureError` when bodies were omitted, there is no such connection or the peer's certificate is
    ///   not in the capture; the certificate's parse error; the replica's errors while reading the result.
    package static func run(
        capture: CaptureFile, connection requested: UInt64?, into replica: Replica, device: LocalDevice,
        clock: ReplayClock
    ) throws -> Result {
        if capture.records.contains(where: \.bodiesOmitted) {
            throw CaptureError(
                .notReplayable, offset: nil, "the capture was made with bodies omitted: its receipts cannot be replayed"
            )
        }
        let connection = try connection(in: capture, requested: requested)
        let peer = try peerCertificate(capture, connection: connection)
        let session = SyncSession(local: device, peer: peer, store: replica)
        var errors = [String]()
        var fed = 0
        var items = 0
        func handle(_ actions: [SyncAction]) {
            for case .event(let e) in actions {
                switch e {
                case .protocolError(let why): errors.append(why)
                case .peerError(let code, let message): errors.append("peer error \(code): \(message)")
                case .ingested(_, let report): items += report.stored + report.duplicates + report.queued
                default: break
                }
            }
        }
        if let first = capture.records.first(where: { $0.connection == connection }) { clock.set(first.time / 1000) }
        handle(session.start())
        for r in capture.records where r.connection == connection && r.kind == .message && r.direction == .inbound {
            clock.set(r.time / 1000)
            handle(session.settle(session.receive(r.data), with: replica))
            fed += 1
        }
        var groups = [GroupResult]()
        for g in try replica.groupIDs() {
            let committed = try replica.vector(of: g).committed
            let tentative = UInt64(try replica.log(of: g, view: .tentative).count) - committed
            groups.append(
                GroupResult(
                    group: g, committed: committed, tentative: tentative,
                    committedHash: try replica.stateHash(of: g, view: .committed),
                    tentativeHash: try replica.stateHash(of: g, view: .tentative)))
        }
        return Result(
            connection: connection, peer: peer.device, messagesFed: fed, itemsFed: items, sessionErrors: errors,
            groups: groups)
    }
}

/// The replica's clock during a replay: the time of the record being fed.
package final class ReplayClock: Sendable {
    private let millis = Mutex<UInt64>(0)
    /// A clock that reads 0 until set.
    package init() {}
    /// Sets the time, in milliseconds since the Unix epoch.
    package func set(_ value: UInt64) { millis.withLock { $0 = value } }
    /// The time last set, in milliseconds since the Unix epoch: the replica's clock.
    package func now() -> UInt64 { millis.withLock { $0 } }
}
