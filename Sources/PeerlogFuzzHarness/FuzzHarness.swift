import PeerlogCaptureTools
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import PeerlogPairing
import PeerlogStore
import PeerlogSync

/// Entry points shared by the libFuzzer targets (Fuzz/) and the regression tests that replay
/// every input kept in Fuzz/Regressions/: each must return, whatever the bytes.
public enum FuzzHarness {
    static let alice = try! LocalDevice.deterministic(
        seed: [UInt8](repeating: 1, count: 32), name: "alice", createdAt: 1)
    static let bob = try! LocalDevice.deterministic(seed: [UInt8](repeating: 2, count: 32), name: "bob", createdAt: 1)

    /// A responder before the handshake and one established with a peer, built once; each
    /// input runs against fresh copies (they are values).
    static let channels: (fresh: SecureChannel, established: SecureChannel) = {
        let allow: @Sendable (DeviceCertificate) -> AuthorizationDecision = { _ in .allow }
        var initiator = SecureChannel(role: .initiator, device: alice, authorize: allow)
        var responder = SecureChannel(role: .responder, device: bob, authorize: allow)
        let fresh = responder
        var toResponder = writes(initiator.start())
        while !toResponder.isEmpty {
            let toInitiator = writes(responder.receive(toResponder))
            toResponder = writes(initiator.receive(toInitiator))
        }
        precondition(responder.isEstablished, "fuzz harness: handshake did not complete")
        return (fresh, responder)
    }()

    /// For the regression tests: the prepared channel really is established.
    public static var establishedForTesting: Bool {
        channels.established.isEstablished && !channels.fresh.isEstablished
    }

    static func writes(_ actions: [ChannelAction]) -> [UInt8] {
        actions.flatMap { action -> [UInt8] in
            if case .write(let bytes) = action { return bytes }
            return []
        }
    }

    /// The frame parser: the first byte picks the state (even: mid-handshake responder, odd:
    /// established), the rest arrives in chunks whose sizes the next bytes choose.
    public static func frames(_ input: [UInt8]) {
        guard let mode = input.first else { return }
        var channel = mode & 1 == 0 ? channels.fresh : channels.established
        var rest = input.dropFirst()
        while !rest.isEmpty && !channel.isClosed {
            let size = Int(rest.first!) + 1
            let chunk = Array(rest.prefix(size))
            rest = rest.dropFirst(size)
            _ = channel.receive(chunk)
            precondition(
                channel.bufferedBytes <= 65_537 + channel.configuration.maxMessageBytes, "receive buffer over its bound"
            )
        }
        _ = channel.inputClosed()
    }

    static let replica: Replica = {
        let r = try! Replica(store: Store(), device: bob)
        _ = try! r.createGroup(name: "fuzz")
        return r
    }()

    /// The sync message decoder, then a fresh session fed the same bytes after its hello.
    public static func syncMessage(_ input: [UInt8]) {
        _ = try? SyncMessage.decode(input, limits: SyncLimits())
        let session = SyncSession(local: bob, peer: alice.certificate, store: replica)
        _ = session.start()
        _ = session.settle(session.receive(input), with: replica)
    }

    /// Capture files: the pcapng/pcap reader, Peerlog records and their transcript views, and
    /// TCP reassembly for `capture decrypt`. Errors are fine; crashes and hangs are not.
    public static func captureFile(_ input: [UInt8]) {
        if let capture = try? CaptureFile(bytes: input) {
            for (i, r) in capture.records.enumerated() { _ = RecordView(index: i, record: r).expanded?.diagnostic() }
        }
        if let file = try? PacketFile(bytes: input), let tcp = try? TCPStreams(file: file) {
            for stream in tcp.streams.values { _ = stream.time(ofByte: stream.bytes.count / 2) }
        }
    }
}

// MARK: Pairing (docs/PROTOCOL.md §20)

extension FuzzHarness {
    static let pairingCode = PairingCode.generate(nameplate: 7)

    /// A host exchange that has sent its opening, and a guest that has answered it (its
    /// `pair_start`), so inputs can stand for any later message of either side.
    static func pairingPair() -> (host: PairingHostExchange, guest: PairingGuestExchange, start: [UInt8])? {
        var offer = PairingOffer(code: pairingCode, purpose: .link, expiresAt: .max)
        guard case .success(let host) = offer.beginExchange(now: 0) else { return nil }
        var guest = PairingGuestExchange(code: pairingCode, purpose: .link)
        guard case .send(let start) = guest.receive(host.opening) else { return nil }
        return (host, guest, start)
    }

    /// Pairing messages and payloads. The first byte picks what the rest is fed to: (0) a host
    /// awaiting `pair_start`, (1) a guest awaiting `pair_open`, (2) a host past the PAKE awaiting
    /// `pair_confirm`, (3) a guest past the PAKE awaiting `pair_done`, (4) the four payload
    /// decoders. Modes 0 and 1 split the rest into messages whose sizes the next bytes choose.
    /// Every outcome is fine but a crash, a hang or a step after the exchange ended.
    public static func pairingMessage(_ input: [UInt8]) {
        guard let mode = input.first, var pair = pairingPair() else { return }
        let rest = Array(input.dropFirst())
        switch mode % 5 {
        case 0:
            for message in chunks(rest) {
                guard case .send = pair.host.receive(message) else { return }
            }
        case 1:
            var guest = PairingGuestExchange(code: pairingCode, purpose: .link)
            for message in chunks(rest) {
                guard case .send = guest.receive(message) else { return }
            }
        case 2:
            guard case .send = pair.host.receive(pair.start) else { return }
            if case .guestPayload(let payload) = pair.host.receive(rest) {
                _ = try? LinkRequest(decoding: payload, transcriptHash: pair.host.transcriptHash ?? [])
            }
        case 3:
            guard case .send(let reply) = pair.host.receive(pair.start),
                case .readyForPayload = pair.guest.receive(reply)
            else { return }
            _ = try? pair.guest.send(guestPayload: [0xa0])
            _ = pair.guest.receive(rest)
        default:
            let hash = [UInt8](repeating: 0, count: 32)
            _ = try? LinkRequest(decoding: rest, transcriptHash: hash)
            _ = try? InviteRequest(decoding: rest, transcriptHash: hash)
            _ = try? InviteGrant(decoding: rest, transcriptHash: hash)
            if let request = try? LinkRequest.make(
                signingKey: alice.signingKey, noiseKey: alice.noiseKey.publicKey, name: "a", transcriptHash: hash)
            {
                _ = try? LinkGrant(decoding: rest, transcriptHash: hash, expecting: request)
            }
        }
    }

    private static func chunks(_ bytes: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var rest = bytes[...]
        while let size = rest.first {
            rest = rest.dropFirst()
            out.append(Array(rest.prefix(Int(size))))
            rest = rest.dropFirst(Int(size))
        }
        return out
    }

    /// Seeds for the pairing fuzzer: each mode with the real message it expects, from a real
    /// exchange (Fuzz/Seeds/pairing is written from these by the regression test).
    public static func pairingSeeds() -> [String: [UInt8]] {
        guard var pair = pairingPair(), case .send(let reply) = pair.host.receive(pair.start),
            case .readyForPayload = pair.guest.receive(reply),
            let request = try? LinkRequest.make(
                signingKey: alice.signingKey, noiseKey: alice.noiseKey.publicKey, name: "a",
                transcriptHash: pair.guest.transcriptHash ?? []),
            let confirm = try? pair.guest.send(guestPayload: request.encoded),
            case .guestPayload = pair.host.receive(confirm),
            let done = try? pair.host.finish(hostPayload: [0xa0])
        else { return [:] }
        /// One message as modes 0 and 1 split their input: its length byte, then its bytes.
        func sized(_ message: [UInt8]) -> [UInt8] { [UInt8(min(message.count, 255))] + message.prefix(255) }
        return [
            "host-start": [0] + sized(pair.start),
            "guest-open": [1] + sized(pairingPair()?.host.opening ?? []),
            "host-confirm": [2] + confirm,
            "guest-done": [3] + done,
            "payload-link-request": [4] + request.encoded,
        ]
    }
}
