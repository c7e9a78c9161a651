import Dispatch
import Logging
import PeerlogCapture
import PeerlogChannel
import PeerlogModel
import Synchronization

/// The daemon's capture switch: every tap record goes to the current `CaptureWriter`, if any.
/// Started by `--capture` or by `capture start` on the control socket, stopped by `capture stop`.
/// No file is written on an event loop: `CaptureWriter.write` only queues the record for its
/// own writer queue (bounded), and key-log lines (opt-in) are appended on a queue of their own.
final class CaptureControl: Sendable {
    private let writer = Mutex<CaptureWriter?>(nil)
    /// Where key-log lines are appended, in the order connections were established.
    private let keyLogQueue = DispatchQueue(label: "peerlog.node.keylog")
    /// Read on every message without taking the lock (a capture that is just starting may
    /// miss a message or two).
    private let running = Atomic<Bool>(false)
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func start(path: String, options: CaptureWriter.Options) throws {
        let new = try CaptureWriter(path: path, options: options)
        let old = writer.withLock { current in
            defer { current = new }
            return current
        }
        running.store(true, ordering: .relaxed)
        old?.close()
        logger.warning(
            "capturing decrypted traffic to \(path)\(options.omitBodies ? " (receipt bodies omitted)" : ", receipt bodies included"): keep the file private"
        )
    }

    @discardableResult
    func stop() -> CaptureStatus? {
        let old = writer.withLock { current in
            defer { current = nil }
            return current
        }
        running.store(false, ordering: .relaxed)
        old?.close()
        return old.map(Self.status)
    }

    var status: CaptureStatus? { writer.withLock { $0 }.map(Self.status) }

    var isRunning: Bool { running.load(ordering: .relaxed) }

    func tapped(_ tap: TapRecord) {
        guard let writer = writer.withLock({ $0 }) else { return }
        let kind: CaptureRecord.Kind =
            switch tap.kind {
            case .message: .message
            case .opened: .opened
            case .closed: .closed
            }
        let record = CaptureRecord(
            time: tap.time * 1000, kind: kind, direction: tap.direction == .inbound ? .inbound : .outbound,
            connection: tap.connection, local: tap.local, peer: tap.peer, data: tap.message)
        if let error = writer.write(record) {
            logger.error("capture to \(writer.path) stopped: \(error)")
            stop()
        }
    }

    /// Appends a connection's transport keys to the key-log file, off the event loop.
    func keyLog(_ entry: KeyLogEntry) {
        keyLogQueue.async { [logger] in
            if let problem = KeyLogFile.append(entry) { logger.warning("\(problem)") }
        }
    }

    private static func status(_ w: CaptureWriter) -> CaptureStatus {
        CaptureStatus(
            path: w.path, files: w.files, records: w.recordCount, omitBodies: w.options.omitBodies,
            maxBytes: w.options.maxBytes)
    }
}

/// A running capture, as `status` and `capture stop` report it.
public struct CaptureStatus: Codable, Sendable, Equatable {
    /// The file the capture started with (rotated files add `.1`, `.2`, …).
    public var path: String
    /// Every file written so far (more than one after rotation).
    public var files: [String]
    /// Records written so far (records still queued are not counted yet).
    public var records: Int
    /// Receipt bodies are left out of the file (§17.3).
    public var omitBodies: Bool
    /// The size in bytes at which a file is rotated; nil: one file, never rotated.
    public var maxBytes: Int?
}
