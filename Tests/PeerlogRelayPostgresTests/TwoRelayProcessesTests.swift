#if PostgreSQL
import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Two real `peerlog relay run --postgres` processes (one relay key) on one real PostgreSQL
/// database, each serving a different member daemon; both members write at once. Every seq
/// is taken exactly once in the table, without a gap, and everyone ends with the same log.
@Suite(.serialized)
struct TwoRelayProcessesTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func string(_ j: JSON?) -> String? { if case .string(let s)? = j { s } else { nil } }

    @discardableResult
    func peerlog(_ args: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let r = try TestSupport.peerlog(args)
        #expect(r.status == 0, "peerlog \(args.joined(separator: " ")): \(r.stderr)", sourceLocation: sourceLocation)
        return r.stdout
    }

    /// `peerlog ARGS --json`, parsed; throws (without recording an issue) unless it exits 0,
    /// so polls can ask before the answer exists.
    func json(_ args: [String]) throws -> JSON {
        let r = try TestSupport.peerlog(args + ["--json"])
        guard r.status == 0 else {
            throw TestSupport.ProcessError(description: "peerlog \(args.joined(separator: " ")): \(r.stderr)")
        }
        return try JSON.parse(r.stdout)
    }

    func person(_ name: String) throws -> (home: String, identity: String) {
        let home = dir + "/" + name
        try peerlog(["init", "--home", home, "--name", name])
        return (home, string(try json(["id", "--home", home])["identity"])!)
    }

    /// seq → CID of the committed log.
    func committed(_ home: String, _ group: String) throws -> [String: String] {
        guard case .array(let items) = try json(["log", "--home", home, group]) else { return [:] }
        var out = [String: String]()
        for item in items where item["status"] == .string("committed") {
            if case .number(let seq)? = item["seq"], let cid = string(item["cid"]) { out[seq] = cid }
        }
        return out
    }

    @Test func twoProcessesSequenceConcurrentWritersWithoutGapOrDuplicate() throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let r1 = dir + "/relay1"
        let r2 = dir + "/relay2"
        try peerlog(["relay", "init", "--home", r1])
        try peerlog(["relay", "init", "--home", r2, "--key-from", r1])
        let key = try peerlog(["relay", "key", "--home", r1]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try peerlog(["relay", "key", "--home", r2]).trimmingCharacters(in: .whitespacesAndNewlines) == key)
        let relayIdentity = string(try json(["id", "--home", r1])["identity"])!
        let alice = try person("alice")
        let bob = try person("bob")
        let carol = try person("carol")
        let relays = try [r1, r2].map { home in
            try DaemonProcess(
                home: home, arguments: ["--allow", alice.identity, "--postgres", database.url],
                command: ["relay", "run"])
        }
        defer { for r in relays { r.stop() } }

        // Encrypted (the default): Bob and Carol join while Alice is away, each writes under an
        // epoch of its own, and each hands its key to the other when it sees the other's acceptance.
        let group = string(try json(["group", "create", "--home", alice.home, "shared"])["id"])!
        for p in [bob, carol] { try peerlog(["group", "add", "--home", alice.home, group, p.identity]) }
        try peerlog(["group", "sequencer", "--home", alice.home, group, "relay", relays[0].address, key])
        // Alice hands the group to the first process; the table gives it to the second.
        let a = try DaemonProcess(home: alice.home)
        #expect(
            TestSupport.waitUntil(timeout: 30) { (try? committed(r2, group)) == (try? committed(alice.home, group)) },
            "the second relay process never got the group: \(relays.map(\.stderr))")
        a.stop()

        // Bob talks only to the first process, Carol only to the second.
        let members = try [(bob, relays[0]), (carol, relays[1])].map { p, relay in
            (
                p,
                try DaemonProcess(
                    home: p.home,
                    arguments: [
                        "--peer", relay.address, "--allow", relayIdentity, "--relay-via", "\(key)=\(relay.address)",
                    ])
            )
        }
        defer { for (_, d) in members { d.stop() } }
        for (p, d) in members {
            #expect(
                TestSupport.waitUntil(timeout: 30) {
                    (try? TestSupport.peerlog(["group", "accept", "--home", p.home, group]).status) == 0
                }, "\(p.home): \(d.stderr)")
        }
        let perWriter = 40
        let threads = members.map { p, _ in
            Thread {
                for i in 0..<perWriter {
                    _ = try? TestSupport.peerlog([
                        "put", "--home", p.home, group, "k\(i)", "\(p.home.split(separator: "/").last!)-\(i)",
                    ])
                }
            }
        }
        for t in threads { t.start() }
        let homes = [bob.home, carol.home, r1, r2]
        var logs = [[String: String]]()
        let converged = TestSupport.waitUntil(timeout: 120) {
            logs = homes.map { (try? committed($0, group)) ?? [:] }
            return logs[0].count >= 2 * perWriter + 6 && Set(logs).count == 1
        }
        #expect(converged, "logs differ: \(logs.map(\.count)) \(relays.map(\.stderr))")

        // The table: seqs from the first relay seq to the last, each once, each receipt once.
        let rows = try database.query("SELECT seq, encode(cid, 'hex') FROM peerlog_relay_log ORDER BY seq")
        let seqs = rows.compactMap { Int($0[0]) }
        // From seq 1: the group's history from before the relay is in the table too.
        #expect(seqs.first == 1 && seqs == Array(1...seqs.last!), "gap, repeat or missing history in \(seqs)")
        #expect(Set(rows.map { $0[1] }).count == rows.count, "a receipt holds two seqs")
        #expect(seqs.last == logs.first?.keys.compactMap { Int($0) }.max())
        // The members read each other and agree; the relay processes, which hold no key, agree
        // with each other.
        var hashes = [String]()
        let agreed = TestSupport.waitUntil(timeout: 30) {
            hashes = homes.map { (try? peerlog(["state-hash", "--home", $0, group])) ?? "" }
            return hashes[0] == hashes[1] && hashes[2] == hashes[3]
        }
        #expect(agreed, "state hashes differ: \(hashes)")
        let show = try json(["group", "show", "--home", carol.home, group])
        #expect(show["encryption"]?["waiting_for_key"] == .int(0), "\(show)")
        #expect(try peerlog(["get", "--home", carol.home, group, "k\(perWriter - 1)"]).contains("-\(perWriter - 1)"))
    }
}

/// A fresh database on the server `tools/postgres.sh` runs (PEERLOG_POSTGRES_URL), dropped after.
struct PostgresTestDatabase {
    let admin: String
    let name: String
    var url: String { String(admin[..<admin.lastIndex(of: "/")!]) + "/" + name }

    init() throws {
        guard let base = ProcessInfo.processInfo.environment["PEERLOG_POSTGRES_URL"] else {
            throw TestSupport.ProcessError(
                description:
                    "PEERLOG_POSTGRES_URL is not set: start a server with `bash tools/postgres.sh start` and export its url"
            )
        }
        admin = base
        name = "peerlog_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        _ = try query("CREATE DATABASE \(name)", on: base)
    }

    func drop() { _ = try? query("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", on: admin) }

    /// Rows of a query, each a list of column texts.
    func query(_ sql: String, on target: String? = nil) throws -> [[String]] {
        let r = try TestSupport.run(
            "/usr/bin/psql", [target ?? url, "-XAt", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        guard r.status == 0 else { throw TestSupport.ProcessError(description: "psql \(sql): \(r.stderr)") }
        return r.stdout.split(separator: "\n").map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
    }
}
#endif
