import Foundation
import PeerlogModel

/// Writes capture records to a pcapng file, one interface per connection, rotating to
/// `FILE.1`, `FILE.2`, … when a file reaches `maxBytes`. Files are created with mode 0600:
/// they hold decrypted traffic. Thread-safe (taps run on several event loops).
///
/// `write` only queues the record: the event loop that tapped it does no file I/O. A private
/// serial queue encodes and writes what is queued, `flushDelay` after the first record or as
/// soon as `flushBytes` are waiting, in one write(2) per batch; `close()` writes everything
/// left. The queue is bounded: past `maxPendingBytes` the tapping thread writes the batch
/// itself rather than let a slow disk grow memory without limit.
package final class CaptureWriter: @unchecked Sendable {
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
    /// Guards the queued records, the counters and the failure.
    private let lock = NSLock()
    private var pending: [CaptureRecord] = []
    private var pendingBytes = 0
    private var timerArmed = false
    private var promptQueued = false
    private var closed = false
    private var failure: Error?
    private var failureReported = false
    private var recordsWritten = 0
    private var filesOpened: [String] = []
    /// Serializes the file side (taken before `lock`, never while holding it).
    private let ioLock = NSLock()
    private var handle: FileHandle?
    private var fileIndex = 0
    private var written = 0
    private var interfaces = [UInt64: UInt32]()

    /// Records written to the files so far (queued ones count once written).
    package var recordCount: Int { lock.withLock { recordsWritten } }
    /// Every file opened so far (more than one after rotation).
    package var files: [String] { lock.withLock { filesOpened } }

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
        try open(path)
    }

    /// Queues one record. A write error (disk full, …) stops the capture and is returned
    /// once, by the next call.
    @discardableResult
    package func write(_ record: CaptureRecord) -> Error? {
        lock.lock()
        if let failure {
            defer {
                failureReported = true
                lock.unlock()
            }
            return failureReported ? nil : failure
        }
        guard !closed else {
            lock.unlock()
            return nil
        }
        pending.append(record)
        pendingBytes += record.data.count + 64
        let full = pendingBytes >= Self.maxPendingBytes
        let arm = !timerArmed
        let prompt = !full && pendingBytes >= Self.flushBytes && !promptQueued
        timerArmed = true
        promptQueued = promptQueued || prompt
        lock.unlock()
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
        lock.withLock { closed = true }
        drain()
        ioLock.withLock {
            try? handle?.close()
            handle = nil
        }
        return lock.withLock {
            defer { failureReported = true }
            return failureReported ? nil : failure
        }
    }

    /// Encodes and writes the queued records, rotating files on the way.
    private func drain() {
        ioLock.lock()
        defer { ioLock.unlock() }
        let records = lock.withLock {
            defer {
                pending = []
                pendingBytes = 0
                timerArmed = false
                promptQueued = false
            }
            return pending
        }
        guard !records.isEmpty, let current = handle else { return }
        var handle = current
        var bytes = [UInt8]()
        var count = 0
        do {
            for var record in records {
                if options.omitBodies, record.kind == .message {
                    record.data = BodyRedaction.redact(record.data)
                    record.bodiesOmitted = true
                }
                if interfaces[record.connection] == nil {
                    interfaces[record.connection] = UInt32(interfaces.count)
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
                    interface: interfaces[record.connection]!, microseconds: record.time, data: record.packet,
                    flags: flags, comment: record.comment)
                written += bytes.count - before
                count += 1
                if let max = options.maxBytes, written >= max {
                    try handle.write(contentsOf: bytes)
                    bytes.removeAll(keepingCapacity: true)
                    try handle.close()
                    self.handle = nil
                    fileIndex += 1
                    try open("\(path).\(fileIndex)")
                    handle = self.handle!
                }
            }
            if !bytes.isEmpty { try handle.write(contentsOf: bytes) }
            lock.withLock { recordsWritten += count }
        } catch {
            try? self.handle?.close()
            self.handle = nil
            lock.withLock {
                recordsWritten += count
                failure = error
            }
        }
    }

    /// Caller holds `ioLock` (or is init).
    private func open(_ file: String) throws {
        unlink(file)
        let fd = Foundation.open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw CaptureError(
                .unwritableFile, offset: nil, "cannot create \(file): \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let header = Pcapng.sectionHeader(application: Self.application)
        try handle.write(contentsOf: header)
        self.handle = handle
        written = header.count
        interfaces = [:]
        lock.withLock { filesOpened.append(file) }
    }
}
