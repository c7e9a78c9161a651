import PeerlogModel

/// Wire constants of the channel (docs/PROTOCOL.md §14).
public enum ChannelWire {
    /// The Noise protocol name (§14.1).
    public static let protocolName = "Noise_XX_25519_ChaChaPoly_BLAKE2b"
    /// "peerlog/1" and a zero byte: the start of every prologue (§14.1).
    public static let prologuePrefix: [UInt8] = Array("peerlog/1".utf8) + [0]
    /// A frame is a 2-byte big-endian length and that many bytes (1...65535).
    public static let headerLength = 2
    /// Largest frame body, in bytes (the 2-byte header's maximum).
    public static let maxFrameLength = 65535
    /// Bytes of the AEAD tag at the end of every encrypted frame body.
    public static let tagLength = 16
    /// Data bytes per transport frame: the frame minus the AEAD tag and the record-type byte.
    public static let maxRecordData = maxFrameLength - tagLength - 1
    /// Bounds a handshake frame: msg2 carries e, encrypted s, and a payload of at most 593 bytes
    /// (`HandshakePayload`: a certificate of at most 512 bytes and the device key's proof): 689.
    public static let maxHandshakeFrameLength = 32 + (32 + tagLength) + HandshakePayload.maxEncodedBytes + tagLength

    /// The first byte of a transport record (§14.4).
    public enum RecordType: UInt8, Sendable {
        case message = 0x00
        case fragment = 0x01
        case lastFragment = 0x02
        case close = 0x03
    }

    /// The Noise prologue: `prologuePrefix` followed by the UTF-8 of `networkID`.
    public static func prologue(networkID: String) -> [UInt8] { prologuePrefix + Array(networkID.utf8) }

    /// Appends one frame (header and body) to `out`.
    static func frame(_ body: [UInt8], into out: inout [UInt8]) {
        precondition((1...maxFrameLength).contains(body.count), "frame body must be 1...65535 bytes")
        out.append(UInt8(body.count >> 8))
        out.append(UInt8(body.count & 0xff))
        out += body
    }
}

/// Splits a byte stream into frame bodies while holding at most one frame of unparsed input.
/// A frame that arrives whole is handed out where it lies in the input; only frames split
/// across reads are copied (into `buffer`, whose capacity is kept for the next one).
struct FrameReader: Sendable {
    enum Step {
        /// A whole frame body inside the input (valid as long as the input is).
        case frame(UnsafeRawBufferPointer)
        /// A whole frame (header and body) in `buffer`: take it with `takeBuffered()`.
        case buffered
        case needMore
        /// The header declares a length outside `1...limit`; checked before the body is read.
        case invalidLength(Int)
    }

    private(set) var buffer: [UInt8] = []

    /// Moves bytes from `input` into the buffer, but only as many as the current frame needs;
    /// `input` keeps the rest.
    mutating func next(from input: inout UnsafeRawBufferPointer, limit: Int) -> Step {
        if buffer.isEmpty, input.count >= ChannelWire.headerLength {
            let length = Int(input[0]) << 8 | Int(input[1])
            guard length >= 1, length <= limit else { return .invalidLength(length) }
            let total = ChannelWire.headerLength + length
            if input.count >= total {
                let body = UnsafeRawBufferPointer(rebasing: input[ChannelWire.headerLength..<total])
                input = UnsafeRawBufferPointer(rebasing: input[total...])
                return .frame(body)
            }
        }
        if buffer.count < ChannelWire.headerLength {
            take(ChannelWire.headerLength - buffer.count, from: &input)
            guard buffer.count == ChannelWire.headerLength else { return .needMore }
        }
        let length = Int(buffer[0]) << 8 | Int(buffer[1])
        guard length >= 1, length <= limit else { return .invalidLength(length) }
        let total = ChannelWire.headerLength + length
        take(total - buffer.count, from: &input)
        return buffer.count == total ? .buffered : .needMore
    }

    /// The buffered frame (header and body); hand the array back with `recycle(_:)`.
    mutating func takeBuffered() -> [UInt8] {
        defer { buffer = [] }
        return buffer
    }

    /// Takes back the array `takeBuffered()` gave out, keeping its capacity.
    mutating func recycle(_ frame: [UInt8]) {
        buffer = frame
        buffer.removeAll(keepingCapacity: true)
    }

    private mutating func take(_ wanted: Int, from input: inout UnsafeRawBufferPointer) {
        let n = min(wanted, input.count)
        guard n > 0 else { return }
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<n]))
        input = UnsafeRawBufferPointer(rebasing: input[n...])
    }
}
