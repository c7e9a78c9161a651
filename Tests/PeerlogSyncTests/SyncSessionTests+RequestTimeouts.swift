import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// Requests in flight time out (§15.2.7): a peer that never answers cannot leave a request
/// marked in flight forever. Time is passed in with `tick(now:)`; no sockets, no clock.
struct SyncRequestTimeoutTests {
    /// Alice and Bob synced; Bob never sees Alice's requests (a stalled or buggy answerer).
    /// Returns the mesh, Alice's end and the ids of the requests Alice sent, as they go.
    final class Stalled {
        let mesh: Mesh
        let alice: Int
        let group: GroupID
        var sent: [UInt64] = []
        var answered = false

        init(limits: SyncLimits) throws {
            let peers = [try TestReplica("alice"), try TestReplica("bob")]
            group = try sharedGroup(peers)
            mesh = Mesh(peers)
            alice = mesh.connect(0, 1, limits: limits).0
            mesh.pump()
            mesh.deliver = { [unowned self] from, m in
                guard from == alice, case .request(_, let id, _) = m else { return true }
                sent.append(id)
                return answered
            }
        }

        func tick(_ now: UInt64) { mesh.route(mesh.ends[alice].session.tick(now: now), from: alice) }

        func ask() {
            let action = ReplicaAction.requestSeqRange(group: group, from: 1, to: 2)
            mesh.route(mesh.ends[alice].session.requestBackfill([action]), from: alice)
            mesh.pump()
        }

        var repeats: [Int] {
            mesh.ends[alice].events.compactMap { if case .requestRepeated(_, _, let n, _) = $0 { n } else { nil } }
        }
    }

    static let limits: SyncLimits = {
        var l = SyncLimits()
        l.requestTimeoutMs = 1_000
        l.maxRequestAttempts = 3
        return l
    }()

    @Test func anUnansweredRequestIsSentAgainThenTheSessionEnds() throws {
        let s = try Stalled(limits: Self.limits)
        s.tick(50_000)
        s.ask()
        s.ask()  // still in flight: not sent twice
        #expect(s.sent.count == 1)
        s.tick(50_999)  // one ms short of the timeout
        #expect(s.sent.count == 1 && s.repeats.isEmpty)
        s.tick(51_000)  // exactly the timeout
        #expect(s.sent.count == 2 && s.repeats == [2])
        #expect(Set(s.sent).count == 2, "a repeat has a new id")
        s.tick(52_000)
        #expect(s.sent.count == 3 && s.repeats == [2, 3])
        #expect(s.mesh.ends[s.alice].closed == nil)
        s.tick(52_999)
        #expect(s.mesh.ends[s.alice].closed == nil)
        s.tick(53_000)  // the last of maxRequestAttempts timed out
        let closed = s.mesh.ends[s.alice].closed ?? ""
        #expect(closed.hasPrefix("timeout: request \(s.sent.last ?? 0) "), "\(closed)")
        #expect(closed.contains("requestTimeoutMs 1000") && closed.contains("maxRequestAttempts 3"))
        #expect(s.sent.count == 3)
    }

    @Test func oneAttemptEndsTheSessionAtTheFirstTimeout() throws {
        var limits = Self.limits
        limits.maxRequestAttempts = 1
        let s = try Stalled(limits: limits)
        s.tick(0)
        s.ask()
        s.tick(999)
        #expect(s.mesh.ends[s.alice].closed == nil)
        s.tick(1_000)
        #expect(s.mesh.ends[s.alice].closed?.hasPrefix("timeout:") == true)
        #expect(s.repeats.isEmpty)
    }

    /// Once the peer answers, `done` ends the wait and nothing is repeated.
    @Test func anAnsweredRequestDoesNotTimeOut() throws {
        let s = try Stalled(limits: Self.limits)
        s.answered = true
        s.tick(0)
        s.ask()
        #expect(s.mesh.ends[s.alice].session.status().requestsInFlight == 0)
        for t in stride(from: UInt64(0), through: 10_000, by: 500) { s.tick(t) }
        #expect(s.sent.count == 1 && s.repeats.isEmpty && s.mesh.ends[s.alice].closed == nil)
    }

    /// A batch of the group from the peer shows it is answering: the wait starts again.
    @Test func aBatchOfTheGroupRestartsTheWait() throws {
        let s = try Stalled(limits: Self.limits)
        s.tick(0)
        s.ask()
        s.tick(900)
        try s.mesh.peers[1].put(s.group, "late", 1)  // Bob writes: a live batch reaches Alice
        s.mesh.changed(1, s.group)
        s.mesh.pump()
        s.tick(1_500)
        #expect(s.repeats.isEmpty, "waited 600 ms since the batch")
        s.tick(1_899)
        #expect(s.repeats.isEmpty)
        s.tick(1_900)
        #expect(s.repeats == [2])
    }

    /// Time while we withhold every credit does not count (the peer could not answer), and a
    /// clock that goes back does not fire, nor stall, the wait.
    @Test func withheldCreditAndAClockGoingBackDoNotCount() throws {
        let s = try Stalled(limits: Self.limits)
        let session = s.mesh.ends[s.alice].session
        s.tick(10_000)
        s.ask()
        session.options.autoGrant = false
        // Bob pushes a batch per write until the credit Alice granted is spent.
        for i in 0..<12 {
            try s.mesh.peers[1].put(s.group, "k\(i)", Int64(i))
            s.mesh.changed(1, s.group)
            s.mesh.pump()
        }
        #expect(session.status().creditGranted == 0)
        s.tick(20_000)
        #expect(s.repeats.isEmpty, "no credit: the wait does not run")
        session.options.autoGrant = true
        s.mesh.route(session.grant(8), from: s.alice)
        s.mesh.pump()
        #expect(session.status().creditGranted > 0)
        s.tick(5_000)  // the clock went back: the wait starts again from here
        s.tick(5_999)
        #expect(s.repeats.isEmpty)
        s.tick(6_000)
        #expect(s.repeats == [2])
    }
}
