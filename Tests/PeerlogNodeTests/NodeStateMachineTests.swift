import PeerlogChannel
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer
import Testing

@testable import PeerlogNode
@testable import PeerlogSync

/// The node's policy, driven without sockets, replicas or clocks.
struct NodeStateMachineTests {
    static func device(_ name: String) throws -> LocalDevice {
        try LocalDevice.deterministic(seed: Array("node/\(name)".utf8), name: name, createdAt: 1)
    }

    /// Two devices ordered by id bytes: `low` initiates the connection that survives a tie-break.
    static func pair() throws -> (low: LocalDevice, high: LocalDevice) {
        let a = try device("a")
        let b = try device("b")
        return a.device.bytes.lexicographicallyPrecedes(b.device.bytes) ? (a, b) : (b, a)
    }

    static func machine(_ local: LocalDevice, allow: Set<IdentityID> = []) -> NodeStateMachine {
        var m = NodeStateMachine(
            local: local.device, admission: NodeAdmission(configured: allow.union([local.identity]), open: false))
        _ = m.start(now: 0, stamp: [])
        return m
    }

    static func connection(_ id: UInt64, to peer: LocalDevice, outbound: Bool) -> NodeConnection {
        NodeConnection(id: id, outbound: outbound, remote: "peer-\(id)", peer: peer.certificate, since: 0)
    }

    static func closes(_ actions: [NodeAction]) -> [UInt64] {
        actions.compactMap { if case .close(let id, _) = $0 { id } else { nil } }
    }

    static func started(_ actions: [NodeAction]) -> [UInt64] {
        actions.compactMap { if case .startSession(let id) = $0 { id } else { nil } }
    }

    // MARK: Tie-break

    /// Both devices dial each other; whichever connection each side sees first, both keep the
    /// one the lower device initiated, and close the other with the typed reason.
    @Test(arguments: [false, true])
    func tieBreakKeepsTheLowerDevicesDialInBothOrders(outboundFirst: Bool) throws {
        let (low, high) = try Self.pair()
        // On `low`: connection 1 is its own dial (the winner), 2 the peer's.
        var onLow = Self.machine(low)
        let lowOwn = Self.connection(1, to: high, outbound: true)
        let lowPeers = Self.connection(2, to: high, outbound: false)
        // On `high`: connection 7 is low's dial (the winner, inbound here), 8 its own.
        var onHigh = Self.machine(high)
        let highPeers = Self.connection(7, to: low, outbound: false)
        let highOwn = Self.connection(8, to: low, outbound: true)

        let lowOrder = outboundFirst ? [lowOwn, lowPeers] : [lowPeers, lowOwn]
        let highOrder = outboundFirst ? [highOwn, highPeers] : [highPeers, highOwn]
        let lowActions = lowOrder.flatMap { onLow.established($0) }
        let highActions = highOrder.flatMap { onHigh.established($0) }

        #expect(onLow.liveConnections.map(\.id) == [1])
        #expect(onHigh.liveConnections.map(\.id) == [7])
        #expect(Self.closes(lowActions) == [2])
        #expect(Self.closes(highActions) == [8])
        #expect(lowActions.contains(.close(2, .duplicateConnection)))
        #expect(onLow.isConnected(device: high.device) && onHigh.isConnected(device: low.device))
    }

    @Test func aNewerConnectionInTheSameDirectionReplacesTheOld() throws {
        let (low, high) = try Self.pair()
        var m = Self.machine(high)
        _ = m.established(Self.connection(1, to: low, outbound: true))
        let actions = m.established(Self.connection(2, to: low, outbound: true))
        #expect(Self.closes(actions) == [1] && Self.started(actions) == [2])
        #expect(m.liveConnections.map(\.id) == [2])
    }

    @Test func theDialerReadsATieBreakFromEitherSidesCloseRecord() {
        let text = NodeCloseReason.duplicateConnection.description
        #expect(text == "duplicate connection (tie-break)")  // on the wire: peers match it
        #expect(NodeCloseReason.isDuplicateConnection(.local(text)))
        #expect(NodeCloseReason.isDuplicateConnection(.remote(text)))
        #expect(!NodeCloseReason.isDuplicateConnection(.remote("shutting down")))
        #expect(!NodeCloseReason.isDuplicateConnection(.protocolError(text)))
        #expect(NodeCloseReason.noLongerAdmitted("gone").description == "no longer admitted: gone")
    }

    // MARK: Fan-out

    @Test func fanOutOffersAnIngestToEveryOtherSession() throws {
        let local = try Self.device("local")
        var m = Self.machine(local)
        for (i, name) in ["p1", "p2", "p3"].enumerated() {
            _ = m.established(Self.connection(UInt64(i + 1), to: try Self.device(name), outbound: true))
        }
        let group = try GroupID(bytes: [UInt8](repeating: 5, count: 16))
        let actions = m.sessionEvent(.ingested(group: group, report: IngestReport()), on: 2, now: 10)
        #expect(actions == [.offerChange(group, to: 1), .offerChange(group, to: 3)])

        // A group operation is checked first, so nothing goes to a peer it just removed.
        var report = IngestReport()
        report.events = [
            .tentative(group: group, cid: CID(digest: [UInt8](repeating: 1, count: 32)), type: "group.member_removed")
        ]
        let withOps = m.sessionEvent(.ingested(group: group, report: report), on: 3, now: 10)
        #expect(withOps == [.observeChanges, .offerChange(group, to: 1), .offerChange(group, to: 2)])

        // Envelopes an elected leader signed go to every session.
        #expect(
            m.electionOutput(sends: [], signed: [group], problems: []) == [1, 2, 3].map { .offerChange(group, to: $0) })
    }

    @Test func electionMessagesGoOnlyToConnectedVoters() throws {
        let local = try Self.device("local")
        let voter = try Self.device("voter")
        let absent = try Self.device("absent")
        var m = Self.machine(local)
        _ = m.established(Self.connection(4, to: voter, outbound: false))
        let group = try GroupID(bytes: [UInt8](repeating: 6, count: 16))
        let vote = SequencerMessage<CID>.vote(term: 3, granted: true)
        let actions = m.electionOutput(
            sends: [
                ElectionSend(to: voter.device, group: group, message: vote),
                ElectionSend(to: absent.device, group: group, message: vote),
            ],
            signed: [], problems: [ElectionError(.cannotPersist, "a problem")]
        )
        #expect(
            actions == [
                .sendElection(group, vote, to: 4),
                .log(.warning, ElectionError(.cannotPersist, "a problem").description),
            ])
        #expect(
            m.sessionEvent(.election(group: group, from: voter.device, vote), on: 4, now: 0) == [
                .receiveElection(group, from: voter.device, vote)
            ])
    }

    // MARK: Cadence

    /// Polls every 250 ms, election ticks every 100 ms, the queue retried on the first poll and
    /// then on the first poll at least 5 s after the last retry.
    @Test func retryCadenceFollowsTickBoundaries() throws {
        var m = NodeStateMachine(
            local: try Self.device("local").device, admission: NodeAdmission(configured: [], open: false))
        #expect(m.start(now: 1_000, stamp: [1]) == [.refreshMembership(groups: nil)])
        #expect(m.tick(now: 1_099) == [])
        #expect(m.tick(now: 1_100) == [.tickElection])
        #expect(m.tick(now: 1_250) == [.tickElection, .retryQueued(backfillVia: nil), .pollChangeStamp])
        // Polls until 5 s after the retry do not retry.
        #expect(m.tick(now: 1_500) == [.tickElection, .pollChangeStamp])
        #expect(m.tick(now: 6_249) == [.tickElection, .pollChangeStamp])
        // Retries happen on poll ticks only: the first poll at or after 6 250 is at 6 499.
        #expect(m.tick(now: 6_499) == [.tickElection, .retryQueued(backfillVia: nil), .pollChangeStamp])
        var n = NodeStateMachine(
            local: try Self.device("local").device, admission: NodeAdmission(configured: [], open: false))
        _ = n.start(now: 0, stamp: [])
        #expect(n.tick(now: 250).contains(.retryQueued(backfillVia: nil)))
        #expect(!n.tick(now: 5_000).contains(.retryQueued(backfillVia: nil)))  // 4 750 ms after
        #expect(n.tick(now: 5_250).contains(.retryQueued(backfillVia: nil)))  // 5 000 ms after
        // Backfill is asked of the lowest connection.
        _ = n.established(Self.connection(9, to: try Self.device("p9"), outbound: true))
        _ = n.established(Self.connection(3, to: try Self.device("p3"), outbound: true))
        #expect(n.tick(now: 10_250).contains(.retryQueued(backfillVia: 3)))
    }

    /// Live sessions learn the time on every poll (their requests in flight time out), in
    /// connection order; with none, nothing is asked.
    @Test func pollsPassTheTimeToLiveSessions() throws {
        var m = Self.machine(try Self.device("local"))
        #expect(!m.tick(now: 250).contains { if case .tickSessions = $0 { true } else { false } })
        _ = m.established(Self.connection(9, to: try Self.device("p9"), outbound: true))
        _ = m.established(Self.connection(3, to: try Self.device("p3"), outbound: true))
        #expect(m.tick(now: 400).allSatisfy { if case .tickSessions = $0 { false } else { true } }, "not a poll")
        #expect(m.tick(now: 500).contains(.tickSessions([3, 9], now: 500)))
        _ = m.connectionClosed(3, peer: nil, remote: "peer-3", reason: "gone", now: 600)
        #expect(m.tick(now: 750).contains(.tickSessions([9], now: 750)))
    }

    @Test func aClockThatJumpsBackDoesNotStallTheTicks() throws {
        var m = NodeStateMachine(
            local: try Self.device("local").device, admission: NodeAdmission(configured: [], open: false))
        _ = m.start(now: 1_000_000, stamp: [])
        #expect(m.tick(now: 1_000_250).contains(.pollChangeStamp))
        // An hour back: the next poll is one period from the new now, not an hour away.
        #expect(m.tick(now: 996_400).isEmpty)
        let after = m.tick(now: 996_400 + 250)
        // The retry clock restarts too, rather than waiting an hour.
        #expect(after.contains(.pollChangeStamp) && after.contains(.retryQueued(backfillVia: nil)))
    }

    /// A start remembers both stamps: its membership read covers every group operation up to
    /// then, so the first poll after it re-reads nothing (and a status's kept folds survive it).
    @Test func theFirstPollAfterAStartSeesNoGroupOperationMoved() throws {
        var m = Self.machine(try Self.device("local"))
        #expect(m.start(now: 0, stamp: [7, 3], groupOperations: [4]) == [.refreshMembership(groups: nil)])
        let none = GroupChanges(groups: [], groupOperations: [])
        #expect(m.changesObserved(stamp: [7, 3], groupOperations: [4], changes: none) == [])
        #expect(
            m.changesObserved(stamp: [7, 3], groupOperations: [5], changes: none)
                == [.refreshMembership(groups: nil)])
    }

    /// Only the groups that changed are offered, and only those with a group operation are
    /// re-checked: the work per change does not grow with the number of groups held.
    @Test func aChangedStampOffersAndRechecksOnlyTheGroupsThatChanged() throws {
        var m = Self.machine(try Self.device("local"))
        let (g1, g2, g3) = try (
            GroupID(bytes: [UInt8](repeating: 1, count: 16)), GroupID(bytes: [UInt8](repeating: 2, count: 16)),
            GroupID(bytes: [UInt8](repeating: 3, count: 16))
        )
        let none = GroupChanges(groups: [], groupOperations: [])
        #expect(m.changesObserved(stamp: [], groupOperations: [], changes: none) == [])
        // No sessions: nothing to offer; the first group-operation stamp refreshes membership.
        #expect(
            m.changesObserved(
                stamp: [1, 0], groupOperations: [1], changes: GroupChanges(groups: [g1], groupOperations: [g1]))
                == [.refreshMembership(groups: [g1])])
        _ = m.established(Self.connection(2, to: try Self.device("p2"), outbound: true))
        _ = m.established(Self.connection(1, to: try Self.device("p1"), outbound: true))
        #expect(m.changesObserved(stamp: [1, 0], groupOperations: [1], changes: none) == [])
        // Entity writes in two groups: offered, nothing re-checked.
        #expect(
            m.changesObserved(
                stamp: [3, 1], groupOperations: [1], changes: GroupChanges(groups: [g3, g2], groupOperations: []))
                == [.offerChanges([g2, g3].sorted(), to: [1, 2])])
        // A group operation in one group: that group alone is re-checked in every session.
        #expect(
            m.changesObserved(
                stamp: [4, 2], groupOperations: [2], changes: GroupChanges(groups: [g2], groupOperations: [g2]))
                == [
                    .refreshMembership(groups: [g2]), .recheckMembership(1, groups: [g2]),
                    .recheckMembership(2, groups: [g2]), .offerChanges([g2], to: [1, 2]),
                ])
        // Rows deleted (the changes cannot be told): everything, as at a start.
        #expect(
            m.changesObserved(stamp: [3, 2], groupOperations: [1], changes: nil)
                == [
                    .refreshMembership(groups: nil), .recheckMembership(1, groups: nil),
                    .recheckMembership(2, groups: nil), .offerAllGroups(to: [1, 2]),
                ])
        // The group-operation stamp moved with no group operation among the new rows (a removal).
        #expect(
            m.changesObserved(stamp: [3, 2], groupOperations: [0], changes: none)
                == [
                    .refreshMembership(groups: nil), .recheckMembership(1, groups: nil),
                    .recheckMembership(2, groups: nil),
                ])
    }

    // MARK: Membership

    @Test func aPeerNoLongerAdmittedIsDisconnected() throws {
        let local = try Self.device("local")
        let member = try Self.device("member")
        let relay = try Self.device("relay")
        var m = Self.machine(local)
        let endpoint = RelayEndpoint(key: relay.device, address: "relay:1")
        #expect(
            m.membershipObserved(members: [member.identity], relays: [endpoint]) == [
                .admissionChanged, .relaysChanged([endpoint]),
            ])
        #expect(m.authorize(member.certificate) == .allow && m.authorize(relay.certificate) == .allow)
        _ = m.established(Self.connection(1, to: member, outbound: true))
        #expect(m.membershipRechecked(1) == [])
        #expect(m.membershipObserved(members: [], relays: [endpoint]) == [.admissionChanged])
        let actions = m.membershipRechecked(1)
        guard case .close(1, .noLongerAdmitted) = actions.last else {
            Issue.record("not closed: \(actions)")
            return
        }
        #expect(m.liveConnections.isEmpty)
    }

    // MARK: What status remembers

    @Test func refusalsAndRejectionsKeepTheNewest32AndLogAFewLinesPerBatch() throws {
        let local = try Self.device("local")
        let peer = try Self.device("peer")
        var m = Self.machine(local)
        _ = m.established(Self.connection(1, to: peer, outbound: true))
        let group = try GroupID(bytes: [UInt8](repeating: 7, count: 16))
        let cids = (0..<40).map { CID(digest: [UInt8](repeating: UInt8($0), count: 32)) }

        let refused = m.sessionEvent(
            .refusedByPeer(group: group, items: cids.map { RefusedReceipt(cid: $0, reason: "full") }), on: 1, now: 5)
        #expect(refused.count == 40)
        #expect(
            m.refusals.count == 32 && m.refusals.first?.cid == cids[8].string && m.refusals.last?.cid == cids[39].string
        )

        let items = cids.map { RejectedItem(cid: $0, author: nil, identity: nil, reason: "bad", invalid: true) }
        let rejected = m.sessionEvent(.rejected(group: group, items: items), on: 1, now: 6)
        #expect(rejected.count == NodeStateMachine.rejectionLogLines + 1)
        #expect(m.rejections.count == 32 && m.rejections.last?.cid == cids[39].string && m.rejections.last?.at == 6)
        _ = m.sessionEvent(.rejected(group: group, items: Array(items.prefix(2))), on: 1, now: 7)
        #expect(m.rejectedTotal == 42 && m.rejections.count == 32)
    }

    @Test func closedConnectionsAreRememberedNewestLast() throws {
        let local = try Self.device("local")
        let peer = try Self.device("peer")
        var m = Self.machine(local)
        _ = m.established(Self.connection(1, to: peer, outbound: true))
        #expect(
            m.connectionClosed(1, peer: peer.device, remote: "r", reason: "closed by peer", now: 3) == [.dropSession(1)]
        )
        #expect(m.connectionClosed(1, peer: peer.device, remote: "r", reason: "again", now: 4) == [])
        for i in 0..<40 {
            _ = m.connectionClosed(UInt64(100 + i), peer: nil, remote: "x", reason: "r\(i)", now: UInt64(i))
        }
        #expect(m.recentlyClosed.count == 32 && m.recentlyClosed.last?.reason == "r39")
        // A session's own close and the node's stop close with typed reasons.
        _ = m.established(Self.connection(2, to: peer, outbound: true))
        #expect(m.sessionClosing(2, reason: "over a limit").last == .close(2, .session("over a limit")))
        _ = m.established(Self.connection(3, to: peer, outbound: true))
        #expect(m.stop() == [.close(3, .shuttingDown)])
        #expect(m.liveConnections.isEmpty)
    }
}
