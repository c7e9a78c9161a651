import PeerlogChannel
import PeerlogCrypto
import PeerlogModel
import PeerlogNoise
import PeerlogTestSupport

enum Devices {
    static let alice = try! LocalDevice.deterministic(seed: [1], name: "alice", createdAt: 1_700_000_000_000)
    static let bob = try! LocalDevice.deterministic(seed: [2], name: "bob", createdAt: 1_700_000_000_000)
    static let allowAll: @Sendable (DeviceCertificate) -> AuthorizationDecision = { _ in .allow }
}

/// Two channels connected in memory: `a` initiates, `b` responds. Writes are queued and
/// delivered in random chunks; every other action is recorded per side.
struct ChannelPair {
    var a: SecureChannel
    var b: SecureChannel
    var aEvents: [ChannelAction] = []
    var bEvents: [ChannelAction] = []
    // Slices, so taking a chunk off the front is O(1) even for megabytes of queued bytes.
    var toB: ArraySlice<UInt8> = []
    var toA: ArraySlice<UInt8> = []
    var rng: SeededRandom
    var maxChunk: Int
    /// Largest `bufferedBytes` seen on either side after any receive.
    var peakBuffered = 0

    init(a: SecureChannel, b: SecureChannel, seed: UInt64 = 1, maxChunk: Int = 70_000) {
        self.a = a
        self.b = b
        rng = SeededRandom(seed: seed)
        self.maxChunk = maxChunk
    }

    init(
        aConfig: ChannelConfiguration = .init(), bConfig: ChannelConfiguration = .init(), seed: UInt64 = 1,
        maxChunk: Int = 70_000,
        aAuthorize: @escaping @Sendable (DeviceCertificate) -> AuthorizationDecision = Devices.allowAll,
        bAuthorize: @escaping @Sendable (DeviceCertificate) -> AuthorizationDecision = Devices.allowAll
    ) {
        self.init(
            a: SecureChannel(role: .initiator, device: Devices.alice, configuration: aConfig, authorize: aAuthorize),
            b: SecureChannel(role: .responder, device: Devices.bob, configuration: bConfig, authorize: bAuthorize),
            seed: seed, maxChunk: maxChunk)
    }

    /// Starts both sides and pumps until quiet.
    mutating func connect() {
        take(a.start(), fromA: true)
        take(b.start(), fromA: false)
        pump()
    }

    mutating func send(fromA: Bool, _ message: [UInt8]) throws {
        let actions = fromA ? try a.send(message) : try b.send(message)
        take(actions, fromA: fromA)
    }

    mutating func take(_ actions: [ChannelAction], fromA: Bool) {
        for action in actions {
            if case .write(let bytes) = action {
                if fromA { toB += bytes } else { toA += bytes }
            } else if fromA {
                aEvents.append(action)
            } else {
                bEvents.append(action)
            }
        }
    }

    mutating func pump() {
        while !toA.isEmpty || !toB.isEmpty {
            if !toB.isEmpty {
                let chunk = Self.nextChunk(&toB, &rng, maxChunk: maxChunk)
                take(b.receive(chunk), fromA: false)
                peakBuffered = max(peakBuffered, b.bufferedBytes)
            }
            if !toA.isEmpty {
                let chunk = Self.nextChunk(&toA, &rng, maxChunk: maxChunk)
                take(a.receive(chunk), fromA: true)
                peakBuffered = max(peakBuffered, a.bufferedBytes)
            }
        }
    }

    private static func nextChunk(_ queue: inout ArraySlice<UInt8>, _ rng: inout SeededRandom, maxChunk: Int) -> [UInt8]
    {
        let n = min(queue.count, Int.random(in: 1...maxChunk, using: &rng))
        let chunk = Array(queue.prefix(n))
        queue = queue.count == n ? [] : queue.dropFirst(n)
        return chunk
    }

    static func delivered(_ events: [ChannelAction]) -> [[UInt8]] {
        events.compactMap { if case .deliver(let m) = $0 { m } else { nil } }
    }

    static func established(_ events: [ChannelAction]) -> Bool {
        events.contains { if case .established = $0 { true } else { false } }
    }

    static func closeReason(_ events: [ChannelAction]) -> ChannelCloseReason? {
        events.lazy.compactMap { if case .closed(let r) = $0 { r } else { nil } }.first
    }
}

/// A hand-built initiator on raw NoiseHandshake, to send records a SecureChannel never would.
struct RawInitiator {
    var handshake: NoiseHandshake
    var send: NoiseCipherState?
    var receive: NoiseCipherState?
    let device: LocalDevice

    init(device: LocalDevice = Devices.alice, networkID: String = "") throws {
        self.device = device
        handshake = try NoiseHandshake(
            protocol: NoiseProtocol(name: ChannelWire.protocolName), initiator: true,
            prologue: ChannelWire.prologue(networkID: networkID), localStatic: device.noiseKey)
    }

    static func frame(_ body: [UInt8]) -> [UInt8] { [UInt8(body.count >> 8), UInt8(body.count & 0xff)] + body }

    /// Runs the handshake against `responder`; returns the responder's actions on msg3.
    mutating func handshake(with responder: inout SecureChannel) throws -> [ChannelAction] {
        let msg1 = try handshake.writeMessage(payload: [])
        let reply = responder.receive(Self.frame(msg1))
        guard case .write(let msg2) = reply.first else {
            throw TestSupport.ProcessError(description: "no msg2: \(reply)")
        }
        _ = try handshake.readMessage(Array(msg2.dropFirst(2)))
        let msg3 = try handshake.writeMessage(payload: HandshakePayload(device: device).encoded)
        (send, receive) = try handshake.split()
        return responder.receive(Self.frame(msg3))
    }

    mutating func record(_ type: UInt8, _ data: [UInt8]) throws -> [UInt8] {
        Self.frame(try send!.encrypt([type] + data))
    }
}
