import Foundation
import Logging
import MetricsTestKit
import NIOCore
import NIOEmbedded
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import Testing

@testable import PeerlogNode
@testable import PeerlogSync

/// What the node counts (docs/TOOLS.md#metrics), read back through swift-metrics' test backend.
struct NodeMetricsTests {
    /// A status document with these groups: (id, committed, tentative, each peer's `behind`).
    static func status(_ groups: [(String, UInt64, Int, [UInt64])], connected: Int = 0) throws -> NodeStatus {
        var status = try JSONDecoder().decode(
            NodeStatus.self,
            from: Data(
                #"{"device":"d","identity":"i","name":"n","peers":[],"groups":[],"recentlyClosed":[],"discovery":false}"#
                    .utf8))
        status.groups = groups.map { id, committed, tentative, behind in
            GroupStatus(
                id: id, name: id, committed: committed, tentative: tentative,
                peers: behind.map {
                    GroupPeerStatus(
                        device: "p", peerCommitted: committed + $0, behind: $0, ahead: 0, caughtUp: false,
                        itemsReceived: 0, itemsSent: 0, itemsReceivedTotal: 0, itemsSentTotal: 0)
                })
        }
        status.peers = (0..<connected).map { _ in
            PeerStatus(address: "127.0.0.1:1", state: .connected, direction: .inbound, source: .inbound)
        }
        return status
    }

    @Test func commitsCountTheGrowthOfCommittedMarksAfterTheFirstRecord() throws {
        let test = TestMetrics()
        let metrics = NodeMetrics(factory: test)
        try metrics.record(Self.status([("g1", 10, 2, [3, 0])], connected: 2))
        #expect(try test.expectCounter("peerlog_commits_total").totalValue == 0, "the first record is the baseline")
        #expect(try test.expectGauge("peerlog_group_committed_seq", [("group", "g1")]).lastValue == 10)
        #expect(try test.expectGauge("peerlog_group_tentative", [("group", "g1")]).lastValue == 2)
        #expect(try test.expectGauge("peerlog_group_lag", [("group", "g1")]).lastValue == 3, "the largest lag")
        #expect(try test.expectGauge("peerlog_connections", [("direction", "inbound")]).lastValue == 2)

        // g1 grows by 5; g2 appears (its first mark is its baseline), then grows by 2.
        try metrics.record(Self.status([("g1", 15, 0, []), ("g2", 4, 0, [])]))
        #expect(try test.expectCounter("peerlog_commits_total").totalValue == 5)
        try metrics.record(Self.status([("g1", 15, 0, []), ("g2", 6, 1, [])]))
        #expect(try test.expectCounter("peerlog_commits_total").totalValue == 7)
        #expect(try test.expectGauge("peerlog_group_lag", [("group", "g1")]).lastValue == 0)
        #expect(try test.expectGauge("peerlog_connections", [("direction", "inbound")]).lastValue == 0)
    }

    @Test func syncEventsCountIngestedRoundTripsAndRepeats() throws {
        let test = TestMetrics()
        let metrics = NodeMetrics(factory: test)
        var report = IngestReport()
        report.stored = 7
        report.duplicates = 3
        metrics.record(SyncEvent.ingested(group: GroupID.random(), report: report))
        metrics.record(SyncEvent.caughtUp(group: GroupID.random()))
        metrics.record(SyncEvent.requestRepeated(group: GroupID.random(), id: 1, attempt: 2, waitedMs: 30_000))
        #expect(
            try test.expectCounter("peerlog_receipts_ingested_total").totalValue == 7, "duplicates are not ingested")
        #expect(try test.expectCounter("peerlog_sync_round_trips_total").totalValue == 1)
        #expect(try test.expectCounter("peerlog_sync_requests_repeated_total").totalValue == 1)
        for reason in ["invalid", "refused"] {
            #expect(try test.expectCounter("peerlog_items_rejected_total", [("reason", reason)]).totalValue == 0)
        }
    }

    /// A real `PeerHandler` on an embedded channel: a handshake that fails is counted by its
    /// kind (never its text), the bytes both ways, and no connection opened.
    @Test func aFailedHandshakeIsCountedByKindWithItsBytes() throws {
        let test = TestMetrics()
        let metrics = NodeMetrics(factory: test)
        for kind in NodeMetrics.handshakeFailureKinds {
            #expect(try test.expectCounter("peerlog_handshake_failures_total", [("reason", kind)]).totalValue == 0)
        }
        let server = try PeerHandlerEmbeddedTests.device("server")
        let (channel, _) = try PeerHandlerEmbeddedTests.responder(server, allow: [], metrics: metrics)
        defer { _ = try? channel.finish() }
        // A frame header announcing more than a handshake frame may hold.
        let garbage: [UInt8] = [0xFF, 0xFF] + Array(repeating: 0x41, count: 30)
        try channel.writeInbound(ByteBuffer(bytes: garbage))
        channel.embeddedEventLoop.run()
        #expect(try test.expectCounter("peerlog_handshake_failures_total", [("reason", "protocol")]).totalValue == 1)
        #expect(try test.expectCounter("peerlog_bytes_received_total").totalValue == Int64(garbage.count))
        #expect(try test.expectCounter("peerlog_connections_opened_total", [("direction", "inbound")]).totalValue == 0)
    }

    @Test func anEstablishedConnectionCountsAsOpenedNotFailed() throws {
        let test = TestMetrics()
        let metrics = NodeMetrics(factory: test)
        let server = try PeerHandlerEmbeddedTests.device("server")
        let client = try PeerHandlerEmbeddedTests.device("client")
        let (channel, _) = try PeerHandlerEmbeddedTests.responder(server, allow: [client.identity], metrics: metrics)
        defer { _ = try? channel.finish() }
        var peer = SecureChannel(role: .initiator, device: client, authorize: { _ in .allow })
        try channel.writeInbound(ByteBuffer(bytes: PeerHandlerEmbeddedTests.writes(peer.start())))
        let actions = peer.receive(try PeerHandlerEmbeddedTests.outbound(channel))
        try channel.writeInbound(ByteBuffer(bytes: PeerHandlerEmbeddedTests.writes(actions)))
        channel.embeddedEventLoop.run()
        #expect(try test.expectCounter("peerlog_connections_opened_total", [("direction", "inbound")]).totalValue == 1)
        #expect(try test.expectCounter("peerlog_bytes_sent_total").totalValue > 0)
        for kind in NodeMetrics.handshakeFailureKinds {
            #expect(try test.expectCounter("peerlog_handshake_failures_total", [("reason", kind)]).totalValue == 0)
        }
    }

    @Test func everyCloseReasonHasAFixedLabel() {
        let reasons: [ChannelCloseReason] = [
            .local("x"), .remote("y"), .protocolError("free text 1"), .unauthorized("free text 2"), .truncated,
            .handshakeTimeout, .resourceLimit("maxPendingHandshakes"),
        ]
        let kinds = Set(reasons.map(NodeMetrics.kind(of:)))
        #expect(kinds == Set(NodeMetrics.handshakeFailureKinds))
    }
}
