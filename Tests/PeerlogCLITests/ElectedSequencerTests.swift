import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Three real daemons elect a sequencer for their group; the leader is killed with SIGKILL;
/// the two others elect a new one and keep committing; nothing committed is lost and every
/// replica holds the same envelopes.
@Suite(.serialized)
struct ElectedSequencerTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    @discardableResult
    func ok(_ args: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try expectPeerlog(args, sourceLocation: sourceLocation)
    }

    func json(_ args: String...) throws -> JSON { try peerlogJSON(args) }

    func string(_ j: JSON?) -> String? { if case .string(let s)? = j { s } else { nil } }

    /// seq → CID of the committed log.
    func committedLog(_ home: String, _ group: String) throws -> [String: String] {
        guard case .array(let items) = try json("log", "--home", home, group) else { return [:] }
        var out = [String: String]()
        for item in items {
            guard item["status"] == .string("committed"), case .number(let seq)? = item["seq"],
                let cid = string(item["cid"])
            else { continue }
            out[seq] = cid
        }
        return out
    }

    func sequencer(_ home: String) -> JSON? {
        guard let s = try? json("status", "--home", home), case .array(let groups)? = s["groups"] else { return nil }
        return groups.first?["sequencer"]
    }

    @Test func leaderKilledNewLeaderCommitsNothingLost() throws {
        var people = [(home: String, identity: String, device: String)]()
        for name in ["ann", "ben", "cat"] {
            let home = dir + "/" + name
            try ok("init", "--home", home, "--name", name)
            let id = try json("id", "--home", home)
            people.append((home, string(id["identity"])!, string(id["device"])!))
        }
        let group = string(try json("group", "create", "--home", people[0].home, "team")["id"])!
        for p in people.dropFirst() { try ok("group", "add", "--home", people[0].home, group, p.identity) }
        let ports = try (0..<3).map { _ in try TestSupport.freePort() }
        func start(_ i: Int) throws -> DaemonProcess {
            var args = [String]()
            for j in 0..<3 where j != i { args += ["--peer", "127.0.0.1:\(ports[j])", "--allow", people[j].identity] }
            return try DaemonProcess(home: people[i].home, listenPort: ports[i], arguments: args)
        }
        var daemons = try (0..<3).map(start)
        defer { for d in daemons { d.stop() } }
        for p in people.dropFirst() {
            #expect(
                TestSupport.waitUntil(timeout: 30) {
                    (try? TestSupport.peerlog(["group", "accept", "--home", p.home, group]).status) == 0
                })
        }
        try ok(
            "group", "sequencer", "--home", people[0].home, group, "elected", people[0].device, people[1].device,
            people[2].device)
        // A leader is elected among the three and commits a follower's write.
        var leader: Int?
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                let views = people.map { sequencer($0.home) }
                leader = views.firstIndex { string($0?["role"]) == "leader" }
                return leader != nil
                    && views.allSatisfy {
                        string($0?["authority"]) == "elected" && string($0?["leader"]) == people[leader!].device
                    }
            }, "no leader: \(daemons.map(\.stderr))")
        guard let l = leader else { return }
        let writer = (l + 1) % 3
        for i in 0..<5 { try ok("put", "--home", people[writer].home, group, "before\(i)", "\(i)") }
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                people.allSatisfy { sequencer($0.home).map { $0["commitLag"] == .number("0") } ?? false }
                    && Set(people.map { try! committedLog($0.home, group) }).count == 1
            })
        let before = try committedLog(people[writer].home, group)

        // SIGKILL the leader; the survivors elect another and commit new writes.
        daemons[l].kill9()
        let survivors = (0..<3).filter { $0 != l }
        let started = Date()
        try ok("put", "--home", people[writer].home, group, "after", "1")
        let committed = TestSupport.waitUntil(timeout: 30) {
            survivors.allSatisfy { (try? committedLog(people[$0].home, group).values.count) == before.count + 1 }
        }
        #expect(committed, "no commit after the leader died: \(survivors.map { daemons[$0].stderr })")
        let failover = Date().timeIntervalSince(started)
        print(
            "elected failover: new leader committed \(String(format: "%.2f", failover)) s after the leader was killed")
        let newLeader = survivors.first { string(sequencer(people[$0].home)?["role"]) == "leader" }
        #expect(newLeader != nil && newLeader != l)
        // Nothing committed before is lost or changed, and the survivors agree.
        for s in survivors {
            let log = try committedLog(people[s].home, group)
            for (seq, cid) in before { #expect(log[seq] == cid, "seq \(seq) changed on \(people[s].home)") }
        }
        #expect(try committedLog(people[survivors[0]].home, group) == committedLog(people[survivors[1]].home, group))

        // The old leader comes back as a follower and ends with the same envelopes.
        daemons[l] = try start(l)
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? committedLog(people[l].home, group)) == (try? committedLog(people[survivors[0]].home, group))
            })
        let hashes = try people.map { try ok("state-hash", "--home", $0.home, group) }
        #expect(Set(hashes).count == 1)
    }
}
