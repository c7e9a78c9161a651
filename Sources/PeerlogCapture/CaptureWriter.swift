import Foundation
import PeerlogModel
import Synchronization

/// Writes capture records to a pcapng file, one interface per connection, rotating to
/// `FILE.1`, `FILE.2`, … when a file reaches `maxBytes`. Files are created with mode 0600:
/// they hold decrypted traffic. Thread-safe (taps run on several event loops).
///
/// `write` only queues the record: the event loop that tapped it does no file I/O. A private
/// serial queue encodes and writes what is queued, `flushDelay` after the first record or as
/// soon as `flushBytes` are waiting, in one write(2) per batch; `close()` writes everything
/// left. The queue is bounded: past `maxPendingBytes` the tapping thread writes the batch
/// itself rather than let a slow disk grow memory without limit.
package final class CaptureWriter: Sendable {
    /// How a capture is written: rotation size and whether receipt bodies are left out (docs/TOOLS.md "Recording").
    package struct Options: Sendable {
        /// Rotate when a file reaches this size (nil: never). At least 64 KiB.
        package var maxBytes: Int?
        /// Replace receipt bodies by their size (§17.3); such captures cannot be replayed.
        package var omitBodies = false
        /// Options as given; `CaptureWriter.init` checks `maxBytes` (bytes; nil: one file, never rotated).
        package init(maxBytes: Int? = nil, omitBodies: Bool = false) {
            self.maxBytes = maxBytes
            self.omitBodies = omitBodies
        }
    }

    /// The smallest `Options.maxBytes` accepted: 65,536 bytes (docs/TOOLS.md "Limits").
    package static let minRotationBytes = 64 << 10
    /// The `shb_userappl` option of every file's section header (§17.1).
    package static let application = "peerlog capture (docs/PROTOCOL.md §17)"

    /// How long a record may wait before the writer's queue writes it.
    package static let flushDelay: DispatchTimeInterval = .milliseconds(20)
    static let flushBytes = 256 << 10
    static let maxPendingBytes = 8 << 20

    /// The first file; rotation continues in `path.1`, `path.2`, ….
    package let path: String
    /// The options the writer was opened with.
    package let options: Options
    private let queue = DispatchQueue(label: "peerlog.capture.writer")

    /// The queued records, the counters and the failure.
    private struct Queued: ~Copyable {
        var pending: [CaptureRecord] = []
        var pendingBytes = 0
        var timerArmed = false
        var promptQueued = false
        var closed = false
        var failure: Error?
        var failureReported = false
        var recordsWritten = 0
        var filesOpened: [String] = []

        /// The failure, the first time it is asked for.
        mutating func unreportedFailure() -> Error? {
            defer { failureReported = true }
            return failureReported ? nil : failure
        }
    }

    /// The file side: the open file, where rotation stands, the connections' interface numbers.
    private struct FileSide: ~Copyable {
        var handle: FileHandle?
        var fileIndex = 0
        var written = 0
        var interfaces = [UInt64: UInt32]()
    }

    private let queued = Mutex(Queued())
    /// Serializes the file side (taken before `queued`, never while holding it).
    private let file = Mutex(FileSide())

    /// Records written to the files so far (queued ones count once written).
    package var recordCount: Int { queued.withLock { $0.recordsWritten } }
    /// Every file opened so far (more than one after rotation).
    package var files: [String] { queued.withLock { $0.filesOpened } }

    /// Creates `path` (replacing any file there) with mode 0600 and writes its section header.
    /// - Throws: `CaptureError` when `options.maxBytes` is below `minRotationBytes` or the file cannot be created;
    ///   the file system's error when the header cannot be written.
    package init(path: String, options: Options = .init()) throws {
        if let max = options.maxBytes, max < Self.minRotationBytes {
            throw CaptureError(
                .invalidOption, offset: nil,
                "capture rotation size \(max) is below the minimum of \(Self.minRotationBytes) bytes")
        }
        self.path = path
        self.options = options
        try file.withLock { try open(path, &$0) }
    }

    /// Queues one record. A write error (disk full, …) stops the capture and is returned
    /// once, by the next call.
    @discardableResult
    package func write(_ record: CaptureRecord) -> Error? {
        enum Next {
            case report(Error?)
            case queued(full: Bool, arm: Bool, prompt: Bool)
        }
        let next: Next = queued.withLock { q in
            if q.failure != nil { return .report(q.unreportedFailure()) }
            guard !q.closed else { return .report(nil) }
            q.pending.append(record)
            q.pendingBytes += record.data.count + 64
            let full = q.pendingBytes >= Self.maxPendingBytes
            let arm = !q.timerArmed
            let prompt = !full && q.pendingBytes >= Self.flushBytes && !q.promptQueued
            q.timerArmed = true
            q.promptQueued = q.promptQueued || prompt
            return .queued(full: full, arm: arm, prompt: prompt)
        }
        guard case .queued(let full, let arm, let prompt) = next else {
            if case .report(let error) = next { return error }
            return nil
        }
        if full {
            drain()
        } else if prompt {
            queue.async { self.drain() }
        }
        if arm { queue.asyncAfter(deadline: .now() + Self.flushDelay) { self.drain() } }
        return nil
    }

    /// Writes everything queued, then closes the file. Returns a write error not yet reported.
    @discardableResult
    package func close() -> Error? {
        queued.withLock { $0.closed = true }
        drain()
        file.withLock { side in
            try? side.handle?.close()
            side.handle = nil
        }
        return queued.withLock { $0.unreportedFailure() }
    }

    /// Encodes and writes the queued records, rotating files on the way.
    private func drain() {
        file.withLock { side in
            let records = queued.withLock { q in
                defer {
                    q.pending = []
                    q.pendingBytes = 0
                    q.timerArmed = false
                    q.promptQueued = false
                }
                return q.pending
            }
            guard !records.isEmpty, side.handle != nil else { return }
            var count = 0
            do {
                count = try write(records, to: &side)
                queued.withLock { $0.recordsWritten += count }
            } catch {
                try? side.handle?.close()
                side.handle = nil
                queued.withLock { q in
                    q.recordsWritten += count
                    q.failure = error
                }
            }
        }
    }

    /// Encodes `records` and writes them in one write(2) per file; returns how many were written.
    private func write(_ records: [CaptureRecord], to side: inout FileSide) throws -> Int {
        var bytes = [UInt8]()
        var count = 0
        for var record in records {
            if options.omitBodies, record.kind == .message {
                record.data = BodyRedaction.redact(record.data)
                record.bodiesOmitted = true
            }
            if side.interfaces[record.connection] == nil {
                side.interfaces[record.connection] = UInt32(side.interfaces.count)
                bytes += Pcapng.interface(
                    linkType: CaptureRecord.linkType, name: "peerlog-conn-\(record.connection)",
                    description:
                        "connection \(record.connection): local device \(record.local), peer device \(record.peer)"
                )
            }
            let flags =
                record.kind == .message
                ? (record.direction == .inbound ? Pcapng.inboundFlag : Pcapng.outboundFlag) : nil
            let before = bytes.count
            bytes += Pcapng.enhancedPacket(
                interface: side.interfaces[record.connection]!, microseconds: record.time, data: record.packet,
                flags: flags, comment: record.comment)
            side.written += bytes.count - before
            count += 1
            if let max = options.maxBytes, side.written >= max {
                try side.handle!.write(contentsOf: bytes)
                bytes.removeAll(keepingCapacity: true)
                try side.handle!.close()
                side.handle = nil
                side.fileIndex += 1
                try open("\(path).\(side.fileIndex)", &side)
            }
        }
        if !bytes.isEmpty { try side.handle!.write(contentsOf: bytes) }
        return count
    }

    /// Creates `file` and writes its section header; the caller holds `file`'s lock (or is init).
    private func open(_ path: String, _ side: inout FileSide) throws {
        unlink(path)
        let fd = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw CaptureError(
                .unwritableFile, offset: nil, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let header = Pcapng.sectionHeader(application: Self.application)
        try handle.write(contentsOf: header)
        side.handle = handle
        side.written = header.count
        side.interfaces = [:]
        queued.withLock { $0.filesOpened.append(path) }
    }
}
