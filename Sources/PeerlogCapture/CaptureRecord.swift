import PeerlogCrypto
import PeerlogModel

/// One record of a Peerlog capture: a decrypted protocol message, or a connection opening or
/// closing. Stored as the packet data of a pcapng enhanced packet block whose interface has
/// link type `CaptureRecord.linkType` (docs/PROTOCOL.md §17).
package struct CaptureRecord: Hashable, Sendable {
    /// LINKTYPE_USER0: pcapng's first link type reserved for private use.
    package static let linkType: UInt16 = 147
    /// The record format version (§17.2, byte 0) this code writes and reads; other versions are refused.
    package static let version: UInt8 = 1
    /// version, kind, direction, flags, connection (8), local (32), peer (32).
    package static let headerBytes = 76

    /// What a record holds (§17.2, byte 1); the raw value is the byte in the file.
    package enum Kind: UInt8, Sendable, CaseIterable {
        /// `data` is one application message (a sync message).
        case message = 0
        /// The connection was established; `data` is the peer's certificate container.
        case opened = 1
        /// The connection closed; `data` is the UTF-8 reason.
        case closed = 2
    }

    /// Which way a record went, seen from the recording node (§17.2, byte 2); the raw value is the byte in the file.
    package enum Direction: UInt8, Sendable {
        /// Received from the peer (for `opened`: the peer dialed us).
        case inbound = 0
        /// Sent to the peer (for `opened`: we dialed).
        case outbound = 1
    }

    /// Microseconds since the Unix epoch.
    package var time: UInt64
    /// What `data` holds.
    package var kind: Kind
    /// Which way the message went (for `opened`: who dialed).
    package var direction: Direction
    /// Receipt bodies were left out of this record's message (`--capture-omit-bodies`).
    package var bodiesOmitted: Bool
    /// The connection's id as the recording node numbered it, unique while that node runs (§17.2); all of a
    /// connection's records share it.
    package var connection: UInt64
    /// The recording node's device.
    package var local: DeviceID
    /// The device at the other end of the connection.
    package var peer: DeviceID
    /// The payload, by `kind`: the message's bytes, the peer's certificate container, or the UTF-8 close reason.
    package var data: [UInt8]
    /// Written as the packet's `opt_comment` (not part of the record; `capture annotate` puts opened
    /// bodies there for Wireshark); never read back.
    package var comment: String? = nil

    /// A record from its fields; nothing is checked.
    package init(
        time: UInt64, kind: Kind, direction: Direction, bodiesOmitted: Bool = false, connection: UInt64,
        local: DeviceID, peer: DeviceID, data: [UInt8]
    ) {
        self.time = time
        self.kind = kind
        self.direction = direction
        self.bodiesOmitted = bodiesOmitted
        self.connection = connection
        self.local = local
        self.peer = peer
        self.data = data
    }

    /// The packet data: the 76-byte header, then `data`.
    package var packet: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.headerBytes + data.count)
        out += [Self.version, kind.rawValue, direction.rawValue, bodiesOmitted ? 1 : 0]
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: connection >> UInt64(shift)))
        }
        out += local.bytes
        out += peer.bytes
        out += data
        return out
    }

    /// Parses packet data; `offset` (of the packet in its file) only names where a problem is.
    package init(packet: [UInt8], time: UInt64, offset: Int) throws {
        guard packet.count >= Self.headerBytes else {
            throw CaptureError(
                offset: offset,
                "peerlog record is \(packet.count) bytes, shorter than its \(Self.headerBytes)-byte header")
        }
        guard packet[0] == Self.version else {
            throw CaptureError(
                offset: offset,
                "peerlog record version \(packet[0]) is not supported (this reader knows \(Self.version))")
        }
        guard let kind = Kind(rawValue: packet[1]) else {
            throw CaptureError(offset: offset + 1, "unknown peerlog record kind \(packet[1])")
        }
        guard let direction = Direction(rawValue: packet[2]) else {
            throw CaptureError(offset: offset + 2, "unknown direction \(packet[2])")
        }
        guard packet[3] & ~1 == 0 else {
            throw CaptureError(offset: offset + 3, "unknown flags 0x\(String(packet[3], radix: 16))")
        }
        var connection: UInt64 = 0
        for i in 4..<12 { connection = connection << 8 | UInt64(packet[i]) }
        do {
            local = try DeviceID(bytes: Array(packet[12..<44]))
            peer = try DeviceID(bytes: Array(packet[44..<76]))
        } catch {
            throw CaptureError(offset: offset + 12, "bad device key: \(error)")
        }
        self.time = time
        self.kind = kind
        self.direction = direction
        self.bodiesOmitted = packet[3] & 1 == 1
        self.connection = connection
        self.data = Array(packet[Self.headerBytes...])
    }
}

/// The one error type of `PeerlogCapture`, in the shape of `SequencerError`: a ``code`` (an
/// `ErrorCode`, so codes can be added), the byte offset where a file problem was found, where
/// it was raised, and equality on the code only. Descriptions never hold key-log secrets.
package struct CaptureError: CodedError {
    /// What went wrong; compare against the static members.
    package typealias Code = ErrorCode<CaptureError>

    /// The kind of failure.
    package let code: Code
    /// The byte offset in the file, when the problem is at one.
    package let offset: Int?
    /// What is wrong, for people.
    package let detail: String
    /// The capture file, when known.
    package var path: String?
    /// Where the error was raised.
    package let file: String
    /// Where the error was raised.
    package let line: Int

    package init(
        _ code: Code = .malformedFile, offset: Int?, _ message: String, path: String? = nil, file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.offset = offset
        detail = message
        self.path = path
        self.file = file
        self.line = line
    }

    package var description: String {
        (path.map { "\($0): " } ?? "") + (offset.map { "offset \($0): " } ?? "") + detail
    }
}

extension ErrorCode where Domain == CaptureError {
    /// The capture (pcap, pcapng or a Peerlog record in it) is truncated or corrupt.
    package static let malformedFile = Self("malformedFile")
    /// The file cannot be read.
    package static let unreadableFile = Self("unreadableFile")
    /// The file cannot be created or written.
    package static let unwritableFile = Self("unwritableFile")
    /// A key log line is malformed.
    package static let malformedKeyLog = Self("malformedKeyLog")
    /// A raw capture cannot be decrypted with the key log (a gap, a wrong key, a link type).
    package static let notDecryptable = Self("notDecryptable")
    /// The capture does not hold what a replay needs (the connection, its peer, bodies).
    package static let notReplayable = Self("notReplayable")
    /// An option is out of range (a rotation size).
    package static let invalidOption = Self("invalidOption")
}
