import Dispatch
import Logging
import PeerlogCapture
import PeerlogChannel
import PeerlogModel
import Synchronization

/// The daemon's capture switch: every tap record goes to the current `CaptureWriter`, if any.
/// Started by `--capture` or by `capture start` on the control socket, stopped by `capture stop`.
/// Files are written on a serial queue of their own, never on an event loop: a handler only
/// hands the record over. Key-log lines (`SSLKEYLOGFILE`-style, opt-in) go the same way.
final class CaptureControl: Sendable {
    /// Where capture and key-log files are written, in the order records were handed over.
    private let files = DispatchQueue(label: "peerlog.node.capture")
    private let writer = Mutex<CaptureWriter?>(nil)
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
        // After the records already handed to the old writer.
        files.sync { _ = old?.close() }
        logger.warning("capturing decrypted traffic to \(path)\(options.omitBodies ? " (receipt bodies omitted)" : ", receipt bodies included"): keep the file private")
    }

    /// Stops the capture once the records handed over so far are written.
    @discardableResult
    func stop() -> CaptureStatus? {
        files.sync { stopNow() }
    }

    /// On the files queue.
    @discardableResult
    private func stopNow() -> CaptureStatus? {
        let old = writer.withLock { current in
            defer { current = nil }
            return current
        }
        running.store(false, ordering: .relaxed)
        _ = old?.close()
        return old.map(Self.status)
    }

    var status: CaptureStatus? {
        files.sync { writer.withLock { $0 }.map(Self.status) }
    }

    var isRunning: Bool { running.load(ordering: .relaxed) }

    /// Hands a tap record to the files queue (called on event loops).
    func tapped(_ tap: TapRecord) {
        files.async { [self] in
            guard let writer = writer.withLock({ $0 }) else { return }
            let kind: CaptureRecord.Kind = switch tap.kind {
            case .message: .message
            case .opened: .opened
            case .closed: .closed
            }
            let record = CaptureRecord(time: tap.time * 1000, kind: kind, direction: tap.direction == .inbound ? .inbound : .outbound,
                                       connection: tap.connection, local: tap.local, peer: tap.peer, data: tap.message)
            if let error = writer.write(record) {
                logger.error("capture to \(writer.path) stopped: \(error)")
                stopNow()
            }
        }
    }

    /// Appends a connection's transport keys to the key-log file, off the event loop.
    func keyLog(_ entry: KeyLogEntry) {
        files.async { [logger] in
            if let problem = KeyLogFile.append(entry) { logger.warning("\(problem)") }
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
