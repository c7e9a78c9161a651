import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Issue 18, item 6: a restarted daemon is not re-sent what it already holds, nor does it
/// re-send what its peer holds. Each side's first message for a group is its `vector`, read
/// from its store, and nothing is pushed before the peer's vector arrives (§15.2.3–6), so
/// the items of the new connection must be zero both ways.
@Suite(.serialized)
struct RestartResendTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    /// The items `home`'s daemon sent and received in `group` with the peer `device` over the
    /// current connection, once both sides said `caught_up`; nil while it has not.
    static func exchanged(home: String, group: String, peer device: String) -> (sent: Int, received: Int)? {
        guard let r = try? TestSupport.peerlog(["status", "--home", home, "--json"]), r.status == 0,
            let status = try? JSON.parse(r.stdout), case .array(let groups)? = status["groups"]
        else { return nil }
        for g in groups where g["id"] == .string(group) {
            guard case .array(let peers)? = g["peers"] else { return nil }
            for p in peers where p["device"] == .string(device) && p["caughtUp"] == .bool(true) {
                guard case .number(let sent)? = p["itemsSent"], case .number(let received)? = p["itemsReceived"]
                else { return nil }
                return (Int(sent) ?? -1, Int(received) ?? -1)
            }
        }
        return nil
    }

    /// Ann's daemon holds a committed log Bob has caught up on; then one of them restarts
    /// (SIGTERM, or a kill -9) and Bob reconnects. The new connection carries no items.
    @Test(arguments: [("bob", false), ("bob", true), ("ann", false), ("ann", true)])
    func aRestartedDaemonIsSentNothingItHolds(restarted: String, crash: Bool) throws {
        let log = try LongLog(dir: dir, writes: 3_000, invitationLast: false)
        let annPort = try TestSupport.freePort()
        let bobArgs = ["--peer", "127.0.0.1:\(annPort)", "--allow", log.ann.identity.string]
        var ann = try DaemonProcess(home: log.annHome, listenPort: annPort)
        var bob = try DaemonProcess(home: log.bobHome, arguments: bobArgs)
        defer {
            ann.stop()
            bob.stop()
        }
        #expect(log.bobCompletes(), "bob stalled at \(log.bobCommitted() ?? 0) of \(log.total)")
        let g = log.group.string
        let (annDevice, bobDevice) = (log.ann.device.string, log.bob.device.string)
        let first = TestSupport.waitUntil(timeout: 30) {
            Self.exchanged(home: log.annHome, group: g, peer: bobDevice).map { $0.sent >= log.total } ?? false
        }
        #expect(first, "the first connection carried the catch-up")

        if restarted == "bob" {
            if crash { bob.kill9() } else { bob.stop() }
            bob = try DaemonProcess(home: log.bobHome, arguments: bobArgs)
        } else {
            if crash { ann.kill9() } else { ann.stop() }
            ann = try DaemonProcess(home: log.annHome, listenPort: annPort)
        }
        var seen: (ann: (sent: Int, received: Int), bob: (sent: Int, received: Int))?
        let reconnected = TestSupport.waitUntil(timeout: 60) {
            guard let a = Self.exchanged(home: log.annHome, group: g, peer: bobDevice),
                let b = Self.exchanged(home: log.bobHome, group: g, peer: annDevice)
            else { return false }
            seen = (a, b)
            return true
        }
        #expect(reconnected, "both sides caught up again\n\(bob.stderr.suffix(2_000))")
        // Anything late (a push after caught_up) would show within a few polls.
        Thread.sleep(forTimeInterval: 1)
        if let a = Self.exchanged(home: log.annHome, group: g, peer: bobDevice),
            let b = Self.exchanged(home: log.bobHome, group: g, peer: annDevice)
        {
            seen = (a, b)
        }
        #expect(seen?.ann.sent == 0, "ann re-sent \(seen?.ann.sent ?? -1) items after \(restarted) restarted")
        #expect(seen?.bob.sent == 0, "bob re-sent \(seen?.bob.sent ?? -1) items after \(restarted) restarted")
        #expect(seen?.ann.received == 0 && seen?.bob.received == 0)
    }
}
