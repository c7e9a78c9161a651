import PeerlogCapture
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
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
