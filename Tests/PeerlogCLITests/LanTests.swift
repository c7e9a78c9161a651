import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

enum LanLab {
    static var available: Bool {
        (try? TestSupport.spawnAndWait(["/bin/bash", TestSupport.repoRoot + "/tools/lan.sh", "check"]).status) == 0
    }
}

/// Daemons on a LAN of network namespaces (tools/lan.sh: a bridge, one avahi per host), with
/// no peer addresses: they find each other over mDNS. Needs root; skipped otherwise.
@Suite(.serialized, .enabled(if: LanLab.available, "needs root to build the namespace LAN (tools/lan.sh check)"))
final class LanTests {
    let dir: String
    let lanDir: String
    var daemons: [Int: DaemonProcess] = [:]

    init() throws {
        dir = try TestSupport.temporaryDirectory()
        lanDir = dir + "/lan"
    }

    deinit {
        for d in daemons.values { d.stop() }
        _ = try? lan(["down", "--dir", lanDir])
    }

    @discardableResult
    func lan(_ args: [String]) throws -> String {
        let r = try TestSupport.spawnAndWait(["/bin/bash", TestSupport.repoRoot + "/tools/lan.sh"] + args, timeout: 60)
        guard r.status == 0 else {
            throw TestSupport.ProcessError(description: "lan.sh \(args): \(r.stderr)\(r.stdout)")
        }
        return r.stdout
    }

    @discardableResult
    func ok(_ args: String...) throws -> String { try TestSupport.peerlogOK(args) }

    func person(_ name: String) throws -> (home: String, identity: String) { try makePerson(name, in: dir) }

    /// Starts host K's daemon on 10.77.0.K:7300 with no peer addresses.
    func start(_ k: Int, _ home: String, _ extra: [String] = []) throws {
        daemons[k] = try DaemonProcess(
            home: home, listenPort: 7300, listenHost: "10.77.0.\(k)", arguments: extra,
            launcher: ["/bin/bash", TestSupport.repoRoot + "/tools/lan.sh", "exec", String(k), "--"], discovery: true)
    }

    func converged(_ homes: [String], _ group: String, timeout: TimeInterval = 60) -> Bool {
        TestSupport.waitUntil(timeout: timeout) {
            let hashes = homes.map { (try? TestSupport.peerlog(["state-hash", "--home", $0, group]).stdout) ?? "" }
            let logs = homes.map {
                (try? TestSupport.peerlog(["log", "--home", $0, group, "--json"]).stdout) ?? "\"tentative\""
            }
            return Set(hashes).count == 1 && !hashes[0].isEmpty && !logs.contains { $0.contains("\"tentative\"") }
        }
    }

    var logs: String {
        daemons.sorted { $0.key < $1.key }.map { "--- host \($0.key)\n\($0.value.stderr)" }.joined(separator: "\n")
    }

    @Test func daemonsDiscoverEachOtherConvergeAndResume() throws {
        try lan(["up", "3", "--dir", lanDir])
        let a = try person("ann")
        let b = try person("ben")
        let c = try person("cat")
        guard
            case .string(let group)? = try JSON.parse(try ok("group", "create", "--home", a.home, "lan", "--json"))[
                "id"]
        else { return }
        try ok("group", "add", "--home", a.home, group, b.identity)
        try ok("group", "add", "--home", a.home, group, c.identity)
        for i in 0..<100 { try ok("put", "--home", a.home, group, "early\(i)", "\(i)") }

        // The invitees pair with Ann (they hold no group with her yet); nobody names an address.
        try start(1, a.home)
        try start(2, b.home, ["--allow", a.identity])
        try start(3, c.home, ["--allow", a.identity])
        for p in [b, c] {
            #expect(
                TestSupport.waitUntil(timeout: 30) {
                    (try? TestSupport.peerlog(["invites", "--home", p.home]).stdout.contains(group)) ?? false
                },
                "no invitation reached \(p.home)\n\(logs)")
            try ok("group", "accept", "--home", p.home, group)
        }
        #expect(converged([a.home, b.home, c.home], group), "no convergence over discovery\n\(logs)")
        let peers = try ok("peers", "--home", b.home)
        #expect(peers.contains("mdns"), "\(peers)")

        // An independent mDNS implementation sees our service and its TXT keys.
        let browse = try lan([
            "exec", "2", "--", TestSupport.python, TestSupport.repoRoot + "/tools/interop/zeroconf_browse.py",
            "--seconds", "4",
        ])
        let services = try JSON.parse(browse)
        guard case .array(let list) = services else {
            Issue.record("zeroconf printed \(browse)")
            return
        }
        let ann = list.first { $0["addresses"] == .array([.string("10.77.0.1")]) }
        #expect(ann?["port"] == .int(7300), "\(browse)")
        for key in ["v", "dev", "id"] { #expect(ann?["txt"]?[key] != nil, "TXT lacks \(key): \(browse)") }
        #expect(ann?["txt"]?["v"] == .string("1"))

        // A fourth host joins later and catches up.
        let d = try person("dan")
        try ok("group", "add", "--home", a.home, group, d.identity)
        try lan(["add", "4", "--dir", lanDir])
        try start(4, d.home, ["--allow", a.identity])
        // An invitee reads an encrypted group once it is a member (Ann's device then shares the key).
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["group", "accept", "--home", d.home, group]).status) == 0
            }, "no invitation reached the fourth host\n\(logs)")
        #expect(
            TestSupport.waitUntil(timeout: 45) {
                (try? TestSupport.peerlog(["state-hash", "--home", d.home, group]).stdout)
                    == (try? TestSupport.peerlog(["state-hash", "--home", a.home, group]).stdout)
            }, "the fourth host did not catch up\n\(logs)")

        // Cat leaves; the others write; Cat comes back and receives only what is new.
        daemons[3]?.stop()
        daemons[3] = nil
        try lan(["remove", "3", "--dir", lanDir])
        for i in 0..<10 { try ok("put", "--home", a.home, group, "late\(i)", "\(i)") }
        try lan(["add", "3", "--dir", lanDir])
        try start(3, c.home)
        #expect(converged([a.home, b.home, c.home, d.home], group), "no convergence after Cat came back\n\(logs)")
        // Counts are per peer since Cat's daemon started, over all its connections (a redial or a
        // tie-break under load does not zero them); a peer shows while it is connected.
        var received = 0
        var peerCount = 0
        _ = TestSupport.waitUntil(timeout: 30) {
            guard let status = try? JSON.parse(try ok("status", "--home", c.home, "--json")),
                case .array(let groups)? = status["groups"], case .array(let lags)? = groups.first?["peers"]
            else { return false }
            received = lags.compactMap { lag -> Int? in
                if case .number(let n)? = lag["itemsReceivedTotal"] { return Int(n) } else { return nil }
            }.reduce(0, +)
            peerCount = lags.count
            return received > 0
        }
        // 10 receipts + 10 envelopes are new; the group holds over 200 items. Allow one duplicate copy per peer.
        #expect(
            received > 0 && received <= 20 * max(peerCount, 1),
            "Cat received \(received) items from \(peerCount) peers after coming back\n\(logs)")
    }

    /// `device link` on host 1, `init --join CODE` on host 2 with no address: the guest finds the
    /// link session over mDNS (`_peerlog-pair._tcp`), then its daemon finds the identity's other
    /// device over mDNS too and receives every group.
    @Test func aLinkSessionIsFoundOverMDNS() throws {
        try lan(["up", "2", "--dir", lanDir])
        let a = try person("laptop1")
        guard
            case .string(let group)? = try JSON.parse(try ok("group", "create", "--home", a.home, "mine", "--json"))[
                "id"]
        else { return }
        try ok("put", "--home", a.home, group, "k", "\"v\"")
        try start(1, a.home)
        guard case .string(let code)? = try JSON.parse(try ok("device", "link", "--home", a.home, "--json"))["code"]
        else { return }
        let bHome = dir + "/laptop2"
        let joined = try TestSupport.spawnAndWait(
            [
                "/bin/bash", TestSupport.repoRoot + "/tools/lan.sh", "exec", "2", "--", TestSupport.peerlogBinary,
                "init",
                "--join", code, "--home", bHome, "--name", "laptop2",
            ], timeout: 60)
        #expect(
            joined.status == 0,
            "init --join over mDNS failed (\(joined.status)): \(joined.stdout)\(joined.stderr)\n\(logs)")
        try start(2, bHome)
        #expect(
            TestSupport.waitUntil(timeout: 45) {
                (try? TestSupport.peerlog(["get", "--home", bHome, group, "k"]).stdout) == "\"v\"\n"
            }, "the linked laptop never received the group\n\(logs)")
    }
}
