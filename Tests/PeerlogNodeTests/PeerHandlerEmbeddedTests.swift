import Logging
import NIOCore
import NIOEmbedded
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import Testing

@testable import PeerlogNode
@testable import PeerlogSync

/// `PeerHandler` on an `EmbeddedChannel`: bytes in, bytes out, no socket. The peer is a plain
/// `SecureChannel` playing the initiator; the handler's hub runs inline.
struct PeerHandlerEmbeddedTests {
    static func device(_ name: String) throws -> LocalDevice {
        try LocalDevice.deterministic(seed: Array("embedded/\(name)".utf8), name: name, createdAt: 1)
    }

    /// A responder's handler for `server`, letting in `allow`, on an active embedded channel.
    static func responder(
        _ server: LocalDevice, allow: Set<IdentityID>, metrics: NodeMetrics = NodeMetrics()
    ) throws -> (EmbeddedChannel, NodeHub) {
        var logger = Logger(label: "embedded")
        logger.logLevel = .critical
        let hub = NodeHub(
            replica: Replica(store: try Store(), device: server), device: server, allow: allow, logger: logger,
            executor: .inline, metrics: metrics)
        hub.startInline()
        let admission = ConnectionAdmission(limits: NodeLimits(), fileDescriptorLimit: 1024)
        let handler = PeerHandler(
            id: 1, outbound: false, hub: hub, configuration: ChannelConfiguration(), admission: admission, tap: nil,
            logger: logger)
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7300)).wait()
        return (channel, hub)
    }

    static func writes(_ actions: [ChannelAction]) -> [UInt8] {
        actions.flatMap { action -> [UInt8] in if case .write(let bytes) = action { bytes } else { [] } }
    }

    static func outbound(_ channel: EmbeddedChannel) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += Array(buffer: buffer) }
        return bytes
    }

    @Test func aHandshakeFrameInGetsTheResponseOutThenTheSessionsHello() throws {
        let server = try Self.device("server")
        let client = try Self.device("client")
        let (channel, hub) = try Self.responder(server, allow: [client.identity])
        defer { _ = try? channel.finish() }
        var peer = SecureChannel(role: .initiator, device: client, authorize: { _ in .allow })

        #expect(try Self.outbound(channel).isEmpty, "a responder speaks second")
        try channel.writeInbound(ByteBuffer(bytes: Self.writes(peer.start())))
        let second = try Self.outbound(channel)
        #expect(!second.isEmpty && second.count <= ChannelWire.headerLength + ChannelWire.maxHandshakeFrameLength)

        let actions = peer.receive(second)
        #expect(actions.contains(.established(server.certificate)), "\(actions)")
        try channel.writeInbound(ByteBuffer(bytes: Self.writes(actions)))
        channel.embeddedEventLoop.run()
        channel.embeddedEventLoop.run()
        #expect(hub.isConnected(device: client.device))
        #expect(channel.isActive)

        // The hub's new session said hello and gave credit through the handler, sealed for this peer.
        let delivered = peer.receive(try Self.outbound(channel)).compactMap { action -> [UInt8]? in
            if case .deliver(let m) = action { m } else { nil }
        }
        let messages = try delivered.map { try SyncMessage.decode($0, limits: .init()) }
        guard messages.count == 2, case .hello = messages[0], case .credit = messages[1] else {
            Issue.record("expected hello then credit, got \(messages)")
            return
        }
    }

    @Test func aMalformedFrameClosesTheChannel() throws {
        let server = try Self.device("server")
        let (channel, hub) = try Self.responder(server, allow: [])
        defer { _ = try? channel.finish() }
        #expect(channel.isActive)
        // A frame header announcing more than any handshake frame may hold.
        try channel.writeInbound(ByteBuffer(bytes: [0xFF, 0xFF] + [UInt8](repeating: 0, count: 64)))
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
        #expect(hub.recentCloses().count == 1)
        #expect(hub.recentCloses().first?.reason.hasPrefix("protocol error") == true, "\(hub.recentCloses())")
    }
}
