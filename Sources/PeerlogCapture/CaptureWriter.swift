import Foundation
import PeerlogModel

/// Writes capture records to a pcapng file, one interface per connection, rotating to
/// `FILE.1`, `FILE.2`, … when a file reaches `maxBytes`. Files are created with mode 0600:
/// they hold decrypted traffic. Thread-safe (taps run on several event loops).
public final class CaptureWriter: @unchecked Sendable {
    public struct Options: Sendable {
        /// Rotate when a file reaches this size (nil: never). At least 64 KiB.
        public var maxBytes: Int?
        /// Replace receipt bodies by their size (§17.3); such captures cannot be replayed.
        public var omitBodies = false
        public init(maxBytes: Int? = nil, omitBodies: Bool = false) {
            self.maxBytes = maxBytes
            self.omitBodies = omitBodies
        }
    }

    public static let minRotationBytes = 64 << 10
    public static let application = "peerlog capture (docs/PROTOCOL.md §17)"

    public let path: String
    public let options: Options
    private let lock = NSLock()
    private var handle: FileHandle?
    private var fileIndex = 0
    private var written = 0
    private var interfaces = [UInt64: UInt32]()
    public private(set) var recordCount = 0
    public private(set) var files: [String] = []

    public init(path: String, options: Options = .init()) throws {
        if let max = options.maxBytes, max < Self.minRotationBytes {
            throw CaptureError(offset: nil, "capture rotation size \(max) is below the minimum of \(Self.minRotationBytes) bytes")
        }
        self.path = path
        self.options = options
        try open(path)
    }

    /// Appends one record. Errors (disk full, …) stop the capture and are returned once.
    @discardableResult
    public func write(_ record: CaptureRecord) -> Error? {
        lock.lock()
        defer { lock.unlock() }
        guard let handle else { return nil }
        var record = record
        if options.omitBodies, record.kind == .message {
            record.data = BodyRedaction.redact(record.data)
            record.bodiesOmitted = true
        }
        do {
            var bytes = [UInt8]()
            if interfaces[record.connection] == nil {
                interfaces[record.connection] = UInt32(interfaces.count)
                bytes += Pcapng.interface(
                    linkType: CaptureRecord.linkType, name: "peerlog-conn-\(record.connection)",
                    description: "connection \(record.connection): local device \(record.local), peer device \(record.peer)"
                )
            }
            let flags = record.kind == .message ? (record.direction == .inbound ? Pcapng.inboundFlag : Pcapng.outboundFlag) : nil
            bytes += Pcapng.enhancedPacket(interface: interfaces[record.connection]!, microseconds: record.time, data: record.packet, flags: flags)
            try handle.write(contentsOf: bytes)
            written += bytes.count
            recordCount += 1
            if let max = options.maxBytes, written >= max {
                try handle.close()
                fileIndex += 1
                try open("\(path).\(fileIndex)")
            }
            return nil
        } catch {
            try? handle.close()
            self.handle = nil
            return error
        }
    }

    public func close() {
        lock.lock()
        defer { lock.unlock() }
        try? handle?.close()
        handle = nil
    }

    /// Caller holds the lock (or is init).
    private func open(_ file: String) throws {
        unlink(file)
        let fd = Foundation.open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw CaptureError(offset: nil, "cannot create \(file): \(String(cString: strerror(errno)))") }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        let header = Pcapng.sectionHeader(application: Self.application)
        try handle.write(contentsOf: header)
        self.handle = handle
        written = header.count
        interfaces = [:]
        files.append(file)
    }
}
