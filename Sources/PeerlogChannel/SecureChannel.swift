import PeerlogCrypto
import PeerlogModel
import PeerlogNoise

/// One side of a Peerlog secure channel. Feed it the byte stream with `receive`, perform the
/// returned actions in order. Every failure closes the channel; nothing is delivered after.
public struct SecureChannel: Sendable {
    enum State: Sendable { case idle, handshaking, established, closed }

    /// Whether this side dialed (initiator) or accepted (responder).
    public let role: ChannelRole
    /// This device: its Noise static key and certificate are what the handshake presents.
    public let device: LocalDevice
    /// The settings this side uses (§14.8).
    public let configuration: ChannelConfiguration
    let authorize: @Sendable (DeviceCertificate) -> AuthorizationDecision
    var state: State = .idle
    var handshake: NoiseHandshake
    var sendCipher: NoiseCipherState?
    var receiveCipher: NoiseCipherState?
    var reader = FrameReader()
    /// Where transport frames are decrypted to (grown to the largest frame seen, kept).
    var plaintext: [UInt8] = []
    /// Data of a fragmented message being reassembled (empty when none).
    var reassembly: [UInt8] = []
    /// The length of the last fragmented message delivered: the next one's first capacity.
    var lastReassembledBytes = 0
    /// Where the capacity of `reassembly` is reserved, once established (nil: unbounded but
    /// for `maxMessageBytes`).
    let reassemblyBudget: ReassemblyBudget?
    var reassemblyReservation: ReassemblyReservation?
    var transportFramesOut: UInt64 = 0
    var transportFramesIn: UInt64 = 0

    /// The peer's device certificate, once the handshake completes; nil before.
    public internal(set) var peerCertificate: DeviceCertificate?
    /// The Noise handshake hash, once established (for tests and key logs).
    public internal(set) var handshakeHash: [UInt8]?
    /// Counters of frames, bytes, messages and rekeys so far.
    public internal(set) var statistics = ChannelStatistics()
    /// The transport keys at nonce 0, once established: only for opt-in key logs.
    public internal(set) var transportKeys: TransportKeys?

    /// A channel in its idle state: nothing is sent until `start()`. `authorize` decides whether
    /// the peer's certificate is let in; `ephemeral` fixes the handshake's ephemeral key (tests,
    /// known-answer vectors; nil: a fresh one); `reassemblyBudget` bounds partial messages
    /// across connections (nil: only `maxMessageBytes`).
    public init(
        role: ChannelRole, device: LocalDevice, configuration: ChannelConfiguration = .init(),
        authorize: @escaping @Sendable (DeviceCertificate) -> AuthorizationDecision,
        ephemeral: X25519.PrivateKey? = nil,
        reassemblyBudget: ReassemblyBudget? = nil
    ) {
        self.role = role
        self.reassemblyBudget = reassemblyBudget
        self.device = device
        self.configuration = configuration
        self.authorize = authorize
        // Cannot throw: the protocol name is a supported constant and XX needs only our static key, which we have.
        handshake = try! NoiseHandshake(
            protocol: NoiseProtocol(name: ChannelWire.protocolName), initiator: role == .initiator,
            prologue: ChannelWire.prologue(networkID: configuration.networkID),
            localStatic: device.noiseKey, ephemeral: ephemeral)
    }

    /// The handshake completed and application messages may flow.
    public var isEstablished: Bool { state == .established }
    /// The channel closed (by either side or on an error); it accepts and delivers nothing more.
    public var isClosed: Bool { state == .closed }
    /// Unparsed input plus the partial message being reassembled: at most 65537 + maxMessageBytes.
    public var bufferedBytes: Int { reader.buffer.count + reassembly.count }
    /// Capacity of the partial message freed when the channel closed (a hint for the NIO
    /// layer to hand large freed buffers back to the system).
    public internal(set) var reassemblyBytesFreedAtClose = 0

    /// Initiator: writes handshake message 1. Responder: nothing (it waits for message 1).
    public mutating func start() -> [ChannelAction] {
        guard state == .idle else { return [] }
        state = .handshaking
        guard role == .initiator else { return [] }
        do { return [.write(frames([try handshake.writeMessage(payload: [])]))] } catch {
            return fail(.protocolError("handshake failed: \(error)"))
        }
    }

    /// Consumes any chunk of the incoming stream.
    public mutating func receive(_ bytes: [UInt8]) -> [ChannelAction] {
        bytes.withUnsafeBytes { receive($0) }
    }

    /// Consumes any chunk of the incoming stream where it lies (a reused read buffer, a NIO
    /// ByteBuffer's readable bytes): whole frames are decrypted straight out of it.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) -> [ChannelAction] {
        guard state != .closed else { return [] }
        if state == .idle {
            guard role == .responder else { return fail(.protocolError("received data before the handshake started")) }
            state = .handshaking
        }
        statistics.bytesIn += UInt64(bytes.count)
        var input = bytes
        var actions: [ChannelAction] = []
        while state != .closed {
            let limit = state == .established ? ChannelWire.maxFrameLength : ChannelWire.maxHandshakeFrameLength
            switch reader.next(from: &input, limit: limit) {
            case .needMore:
                return actions
            case .invalidLength(let n):
                actions += fail(
                    .protocolError(n == 0 ? "zero-length frame" : "frame of \(n) bytes exceeds \(limit) bytes"))
            case .frame(let body):
                actions += receiveFrame(body)
            case .buffered:
                let frame = reader.takeBuffered()
                actions += frame.withUnsafeBytes {
                    receiveFrame(UnsafeRawBufferPointer(rebasing: $0[ChannelWire.headerLength...]))
                }
                if state != .closed { reader.recycle(frame) }
            }
        }
        return actions
    }

    private mutating func receiveFrame(_ body: UnsafeRawBufferPointer) -> [ChannelAction] {
        statistics.framesIn += 1
        return state == .established ? receiveTransport(body) : receiveHandshake(Array(body))
    }

    /// Closes locally: sends a close record if established.
    public mutating func close(reason: String) -> [ChannelAction] {
        guard state != .closed else { return [] }
        return fail(.local(reason))
    }

    /// Closes locally because the peer reached a resource limit named in `limit`.
    public mutating func close(limit: String) -> [ChannelAction] {
        guard state != .closed else { return [] }
        return fail(.resourceLimit(limit))
    }

    /// The stream ended (EOF). Without a close record first, that is truncation.
    public mutating func inputClosed() -> [ChannelAction] {
        guard state != .closed else { return [] }
        return fail(.truncated, sendRecord: false)
    }

    /// The handshake timer fired; only matters while the handshake is incomplete.
    public mutating func handshakeTimedOut() -> [ChannelAction] {
        guard state == .idle || state == .handshaking else { return [] }
        return fail(.handshakeTimeout)
    }

    /// Ends the channel: a close record first when transport keys exist and `sendRecord`.
    mutating func fail(_ reason: ChannelCloseReason, sendRecord: Bool = true) -> [ChannelAction] {
        var actions: [ChannelAction] = []
        if sendRecord, sendCipher != nil, let frame = try? sealedFrame(.close, Self.closeData(reason)) {
            actions.append(.write(frame))
        }
        closeBuffers()
        actions.append(.closed(reason))
        return actions
    }

    /// Frees the input and reassembly buffers (no retained capacity) and returns the budget.
    mutating func closeBuffers() {
        state = .closed
        reader = FrameReader()
        plaintext = []
        reassemblyBytesFreedAtClose = reassembly.capacity
        reassembly = []
        reassemblyReservation?.releaseAll()
        reassemblyReservation = nil
    }

    /// The text a close record carries for a reason we decided on.
    static func closeData(_ reason: ChannelCloseReason) -> [UInt8] {
        let text: String
        switch reason {
        case .local(let r), .unauthorized(let r): text = r
        default: text = reason.description
        }
        return Array(text.utf8.prefix(ChannelWire.maxRecordData))
    }

    /// Frames bodies for the wire and counts them.
    mutating func frames(_ bodies: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for body in bodies { ChannelWire.frame(body, into: &out) }
        statistics.framesOut += UInt64(bodies.count)
        statistics.bytesOut += UInt64(out.count)
        return out
    }
}
