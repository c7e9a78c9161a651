/// Wire constants of the channel (docs/protocol-transport.md).
public enum ChannelWire {
    public static let protocolName = "Noise_XX_25519_ChaChaPoly_BLAKE2b"
    public static let prologuePrefix: [UInt8] = Array("peerlog/1".utf8) + [0]
    /// A frame is a 2-byte big-endian length and that many bytes (1...65535).
    public static let headerLength = 2
    public static let maxFrameLength = 65535
    public static let tagLength = 16
    /// Data bytes per transport frame: the frame minus the AEAD tag and the record-type byte.
    public static let maxRecordData = maxFrameLength - tagLength - 1
    /// Bounds a handshake frame: msg2 carries e, encrypted s, and a certificate of at most 512 bytes.
    public static let maxHandshakeFrameLength = 32 + (32 + tagLength) + 512 + tagLength

    public enum RecordType: UInt8, Sendable {
        case message = 0x00
        case fragment = 0x01
        case lastFragment = 0x02
        case close = 0x03
    }

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
struct FrameReader: Sendable {
    enum Step {
        case frame([UInt8])
        case needMore
        /// The header declares a length outside `1...limit`; checked before the body is read.
        case invalidLength(Int)
    }

    private(set) var buffer: [UInt8] = []

    /// Moves bytes from `input` into the buffer, but only as many as the current frame needs;
    /// `input` keeps the rest.
    mutating func next(from input: inout ArraySlice<UInt8>, limit: Int) -> Step {
        // Fast path: a whole frame in the input and nothing buffered: one copy, not two.
        if buffer.isEmpty, input.count >= ChannelWire.headerLength {
            let i = input.startIndex
            let length = Int(input[i]) << 8 | Int(input[i + 1])
            guard length >= 1, length <= limit else { return .invalidLength(length) }
            if input.count >= ChannelWire.headerLength + length {
                let body = Array(input[(i + 2)..<(i + 2 + length)])
                input = input.dropFirst(ChannelWire.headerLength + length)
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
        guard buffer.count == total else { return .needMore }
        let body = Array(buffer[ChannelWire.headerLength...])
        buffer.removeAll(keepingCapacity: true)
        return .frame(body)
    }

    private mutating func take(_ wanted: Int, from input: inout ArraySlice<UInt8>) {
        let n = min(wanted, input.count)
        buffer += input.prefix(n)
        input = input.dropFirst(n)
    }
}
