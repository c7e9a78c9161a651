import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogNode

/// What a restart costs on the wire (issue 18): two real daemons on loopback, the receiver
/// caught up on `count` committed receipts; then each side in turn restarts, gracefully
/// (SIGTERM) and by a crash (SIGKILL), the receiver redials, and the items each side sent over
/// the new connection are counted from `status` once both said `caught_up`. Every item of
/// the new connection is one the peer already held.
func daemonRestartBench(count: Int) throws {
    _ = try BenchDaemon.binary
    let dir = NSTemporaryDirectory() + "peerlog-restart-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let f = try CatchUpFixture(count: count)
    _ = try f.makeHomes(in: dir)

    var source = try BenchDaemon(home: dir + "/source", [])
    let address = source.address
    let targetArguments = ["--peer", address, "--allow", f.owner.identity.string]
    var target = try BenchDaemon(home: dir + "/target", targetArguments)
    defer {
        source.stop()
        target.stop()
    }
    let sourceSees = { exchanged(home: dir + "/source", group: f.group, peer: f.receiver.device) }
    let targetSees = { exchanged(home: dir + "/target", group: f.group, peer: f.owner.device) }
    // The first connection carries the whole catch-up: wait until the receiver holds it all.
    let targetStore = try Replica(path: dir + "/target/replica.sqlite", device: f.receiver)
    let expected = UInt64(f.receipts.count)
    _ = try poll(within: .seconds(max(300, count / 500)), "the first catch-up") { () -> Bool? in
        (try? targetStore.committedSeq(of: f.group)) == expected ? true : nil
    }
    let first = try poll(within: .seconds(30), "the first connection's counters") { sourceSees() }
    figure("items sent by the first connection", format(Double(first.sent)))

    for (who, crash) in [("receiver", false), ("receiver", true), ("sender", false), ("sender", true)] {
        if who == "receiver" {
            if crash { target.kill9() } else { target.stop() }
            target = try BenchDaemon(home: dir + "/target", targetArguments)
        } else {
            if crash { source.kill9() } else { source.stop() }
            source = try BenchDaemon(home: dir + "/source", listen: address, [])
        }
        _ = try poll(within: .seconds(60), "reconnection after the \(who)'s restart") { () -> Bool? in
            sourceSees() != nil && targetSees() != nil ? true : nil
        }
        // A push after caught_up would show within a few polls.
        Thread.sleep(forTimeInterval: 1)
        guard (try? targetStore.committedSeq(of: f.group)) == expected else {
            throw BenchError("the receiver lost data")
        }
        guard let s = sourceSees(), let t = targetSees() else { throw BenchError("status unreadable after restart") }
        figure(
            "re-sent after the \(who)'s \(crash ? "kill -9" : "SIGTERM")",
            "\(s.sent + t.sent) items (\(s.sent) + \(t.sent))")
    }
}

/// Items `home`'s daemon sent and received in `group` with `peer` on the current connection,
/// once the peer said `caught_up`; nil before (or while the daemon does not answer).
private func exchanged(home: String, group: GroupID, peer: DeviceID) -> (sent: Int, received: Int)? {
    guard let status = try? ControlClient.status(socketPath: home + "/peerlog.sock"),
        let g = status.groups.first(where: { $0.id == group.string }),
        let p = g.peers.first(where: { $0.device == peer.string }), p.caughtUp
    else { return nil }
    return (p.itemsSent, p.itemsReceived)
}

/// Polls `probe` every 100 ms until it gives a value, for at most `limit`.
private func poll<T>(within limit: Duration, _ what: String, _ probe: () -> T?) throws -> T {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while clock.now < end {
        if let value = probe() { return value }
        Thread.sleep(forTimeInterval: 0.1)
    }
    throw BenchError("\(what) did not happen within \(limit)")
}
