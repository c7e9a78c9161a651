import PeerlogEngine
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport
import Testing

/// Keepalive and idle timeout (§15.2.12), time passed in with `tick(now:)`: no sockets, no clock.
struct SyncKeepaliveTests {
    static let limits: SyncLimits = {
        var l = SyncLimits()
        l.keepaliveIntervalMs = 300
        l.idleTimeoutMs = 900
        return l
    }()

    final class Pair {
        let mesh: Mesh
        let ends: (Int, Int)
        /// Messages from this end are lost (a peer that vanished).
        var silent: Int?

        init(keepalive: Bool = true, silentFromStart: Bool = false) throws {
            let peers = [try TestReplica("alice"), try TestReplica("bob")]
            _ = try sharedGroup(peers)
            mesh = Mesh(peers)
            if silentFromStart { silent = 1 }
            let pings = Box()
            mesh.deliver = { [pings] from, m in
                if case .ping = m { pings.values[from] += 1 }
                return from != pings.silent
            }
            self.box = pings
            pings.silent = silent
            ends = mesh.connect(0, 1, limits: SyncKeepaliveTests.limits, keepalive: keepalive)
            mesh.pump()
        }

        final class Box {
            var values = [0, 0]
            var silent: Int?
        }
        let box: Box

        func mute(_ end: Int) { box.silent = end }

        /// Both ends tick every 100 ms from `from` through `to`, delivering in between.
        func run(from: UInt64, to: UInt64) {
            var t = from
            while t <= to {
                for e in [ends.0, ends.1] where mesh.ends[e].closed == nil {
                    mesh.route(mesh.ends[e].session.tick(now: t), from: e)
                }
                mesh.pump()
                t += 100
            }
        }
    }

    @Test func pingsKeepAQuietSessionOpen() throws {
        let p = try Pair()
        p.run(from: 10_000, to: 13_000)
        #expect(p.mesh.ends[p.ends.0].closed == nil && p.mesh.ends[p.ends.1].closed == nil)
        #expect(p.box.values[p.ends.0] >= 9 && p.box.values[p.ends.1] >= 9, "\(p.box.values)")
    }

    @Test func aPeerThatWentSilentIsClosedAtTheIdleTimeout() throws {
        let p = try Pair()
        p.run(from: 10_000, to: 10_500)
        p.mute(p.ends.1)  // bob's lid closes: nothing of his arrives any more
        var closedAt: UInt64?
        for t in stride(from: UInt64(10_600), through: 13_000, by: 100) where closedAt == nil {
            p.run(from: t, to: t)
            if p.mesh.ends[p.ends.0].closed != nil { closedAt = t }
        }
        // Bob's last ping left at most 300 ms before the mute and was heard at the next tick:
        // the close comes 900 ms after that tick, never sooner.
        #expect(closedAt.map { (11_200...11_500).contains($0) } == true, "closed at \(String(describing: closedAt))")
        let closed = p.mesh.ends[p.ends.0].closed ?? ""
        #expect(closed.hasPrefix("idle: nothing received for idleTimeoutMs 900 ms"), "\(closed)")
    }

    @Test func aPeerWithoutKeepaliveIsNeitherPingedNorTimedOut() throws {
        let p = try Pair(keepalive: false)
        p.run(from: 10_000, to: 10_200)
        p.mute(p.ends.1)
        p.run(from: 10_300, to: 20_000)
        #expect(p.mesh.ends[p.ends.0].closed == nil)
        #expect(p.box.values[p.ends.0] == 0, "alice pinged a peer that did not list keepalive")
    }

    @Test func aPeerThatNeverSaysHelloIsClosedAtTheIdleTimeout() throws {
        let p = try Pair(silentFromStart: true)
        p.run(from: 5_000, to: 5_800)
        #expect(p.mesh.ends[p.ends.0].closed == nil)
        p.run(from: 5_900, to: 5_900)
        let closed = p.mesh.ends[p.ends.0].closed ?? ""
        #expect(closed.hasPrefix("idle: no hello within idleTimeoutMs 900 ms"), "\(closed)")
    }

    @Test func pingRoundTripsAndIsNotABatch() throws {
        let bytes = SyncMessage.ping.encoded()
        #expect(try SyncMessage.decode(bytes, limits: .init()) == .ping)
        #expect(!SyncMessage.ping.isBatch && SyncMessage.ping.group == nil)
    }
}
