import Foundation
import Logging
import PeerlogCapture
import PeerlogChannel
import PeerlogModel
import Synchronization

/// The daemon's capture switch: every tap record goes to the current `CaptureWriter`, if any.
/// Started by `--capture` or by `capture start` on the control socket, stopped by `capture stop`.
final class CaptureControl: @unchecked Sendable {
    private let lock = NSLock()
    private var writer: CaptureWriter?
    /// Read on every message without taking the lock (a capture that is just starting may
    /// miss a message or two).
    private let running = Atomic<Bool>(false)
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func start(path: String, options: CaptureWriter.Options) throws {
        let new = try CaptureWriter(path: path, options: options)
        lock.lock()
        let old = writer
        writer = new
        lock.unlock()
        running.store(true, ordering: .relaxed)
        old?.close()
        logger.warning("capturing decrypted traffic to \(path)\(options.omitBodies ? " (receipt bodies omitted)" : ", receipt bodies included"): keep the file private")
    }

    @discardableResult
    func stop() -> CaptureStatus? {
        lock.lock()
        let old = writer
        writer = nil
        lock.unlock()
        running.store(false, ordering: .relaxed)
        old?.close()
        return old.map(Self.status)
    }

    var status: CaptureStatus? {
        lock.lock()
        defer { lock.unlock() }
        return writer.map(Self.status)
    }

    var isRunning: Bool { running.load(ordering: .relaxed) }

    func tapped(_ tap: TapRecord) {
        lock.lock()
        let writer = self.writer
        lock.unlock()
        guard let writer else { return }
        let kind: CaptureRecord.Kind = switch tap.kind {
        case .message: .message
        case .opened: .opened
        case .closed: .closed
        }
        let record = CaptureRecord(time: tap.time * 1000, kind: kind, direction: tap.direction == .inbound ? .inbound : .outbound,
                                   connection: tap.connection, local: tap.local, peer: tap.peer, data: tap.message)
        if let error = writer.write(record) {
            logger.error("capture to \(writer.path) stopped: \(error)")
            stop()
        }
    }

    private static func status(_ w: CaptureWriter) -> CaptureStatus {
        CaptureStatus(path: w.path, files: w.files, records: w.recordCount, omitBodies: w.options.omitBodies, maxBytes: w.options.maxBytes)
    }
}

/// A running capture, as `status` and `capture stop` report it.
public struct CaptureStatus: Codable, Sendable, Equatable {
    public var path: String
    /// Every file written so far (more than one after rotation).
    public var files: [String]
    public var records: Int
    public var omitBodies: Bool
    public var maxBytes: Int?
}
