import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// The independent Python peer (noiseprotocol + cbor2 + PyNaCl) against a real daemon over TCP.
/// Plaintext groups, so the peer checks bodies too (tools/interop/group_crypto.py covers sealed ones).
@Suite(.serialized)
struct DaemonInteropTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    @discardableResult
    func ok(_ args: [String]) throws -> String { try TestSupport.peerlogOK(args) }

    @Test func pythonPeerHandshakesRequestsARangeAndVerifiesReceipts() throws {
        let home = dir + "/alice"
        _ = try ok(["init", "--home", home, "--name", "alice"])
        let created = try JSON.parse(try ok(["group", "create", "--home", home, "team", "--json", "--plaintext"]))
        guard case .string(let group)? = created["id"] else {
            Issue.record("no group id")
            return
        }
        let seed = "0c"
        let python = try JSON.parse(try TestSupport.python("sync_client.py", ["identity", "--seed", seed]))
        guard case .string(let identity)? = python["identity"] else {
            Issue.record("no python identity")
            return
        }
        // The Python identity is invited: a pending member may connect and is offered the group.
        _ = try ok(["group", "add", "--home", home, group, identity])
        for i in 1...30 { _ = try ok(["put", "--home", home, group, "k\(i)", "v\(i)"]) }

        let daemon = try DaemonProcess(home: home)
        defer { daemon.stop() }
        let out = try TestSupport.python(
            "sync_client.py",
            ["fetch", "127.0.0.1", String(daemon.port), "--seed", seed, "--group", group, "--from", "5", "--to", "9"])
        let summary = try JSON.parse(out)
        // group.created + member_added + 30 puts, all committed by Alice's device (the sequencer).
        #expect(summary["receipts"] == .int(32), "\(out)")
        #expect(summary["envelopes"] == .int(32), "\(out)")
        #expect(summary["range_present"] == .bool(true), "\(out)")
        #expect(summary["forks"] == .array([]))
        let daemonLog = daemon.stderr
        #expect(daemonLog.contains("connected to device"), "\(daemonLog)")
    }

    /// A batch put is sequenced as one run (§3.5): Python verifies the run items from a real sync
    /// independently; without `envelope_runs` in its hello it gets single envelopes instead.
    @Test func pythonPeerVerifiesBatchedEnvelopes() throws {
        let home = dir + "/carol"
        _ = try ok(["init", "--home", home, "--name", "carol"])
        let created = try JSON.parse(try ok(["group", "create", "--home", home, "team", "--json", "--plaintext"]))
        guard case .string(let group)? = created["id"] else {
            Issue.record("no group id")
            return
        }
        let seed = "0f"
        let python = try JSON.parse(try TestSupport.python("sync_client.py", ["identity", "--seed", seed]))
        guard case .string(let identity)? = python["identity"] else {
            Issue.record("no python identity")
            return
        }
        _ = try ok(["group", "add", "--home", home, group, identity])
        let lines = (1...20).map { "{\"key\": \"k\($0)\", \"value\": \"v\($0)\"}" }.joined(separator: "\n") + "\n"
        try lines.write(toFile: dir + "/batch.jsonl", atomically: true, encoding: .utf8)
        _ = try ok(["put", "--home", home, group, "--batch", dir + "/batch.jsonl"])

        let daemon = try DaemonProcess(home: home)
        defer { daemon.stop() }
        let fetch = [
            "fetch", "127.0.0.1", String(daemon.port), "--seed", seed, "--group", group, "--from", "1", "--to", "22",
        ]
        let batched = try JSON.parse(try TestSupport.python("sync_client.py", fetch + ["--runs"]))
        // Seqs 3...22 are one run of 20 under one signature.
        #expect(batched["envelopes"] == .int(22), "\(batched)")
        #expect(batched["batched_envelopes"] == .int(20), "\(batched)")
        #expect(batched["runs"] == .int(1), "\(batched)")
        #expect(batched["range_present"] == .bool(true) && batched["forks"] == .array([]), "\(batched)")
        let single = try JSON.parse(try TestSupport.python("sync_client.py", fetch))
        #expect(single["envelopes"] == .int(22), "\(single)")
        #expect(single["batched_envelopes"] == .int(0), "\(single)")
        #expect(single["range_present"] == .bool(true) && single["forks"] == .array([]), "\(single)")
    }

    @Test func pythonPeerWithAnotherNetworkIDIsRefused() throws {
        let home = dir + "/bob"
        _ = try ok(["init", "--home", home, "--name", "bob"])
        let daemon = try DaemonProcess(home: home, arguments: ["--network", "lab"])
        defer { daemon.stop() }
        let r = try TestSupport.run(
            TestSupport.python,
            [
                TestSupport.repoRoot + "/tools/interop/peerlog_channel.py", "--network", "elsewhere", "connect",
                "127.0.0.1", String(daemon.port),
            ])
        #expect(r.status != 0)
        #expect(r.stderr.contains("decrypt") || r.stderr.contains("handshake"), "\(r.stderr)")
        #expect(TestSupport.waitUntil(timeout: 30) { daemon.stderr.contains("closed") }, "\(daemon.stderr)")
        #expect(daemon.isRunning)
    }

    /// PROTOCOL.md §14.3: an identity the daemon admits (a member of its group) that presents a
    /// certificate naming another device's id is refused at the handshake with the reason, and the
    /// daemon stays up; the same identity as its own device is let in (so the test can fail).
    @Test func aMemberClaimingAnotherDevicesIdIsRefused() throws {
        let home = dir + "/fay"
        _ = try ok(["init", "--home", home, "--name", "fay"])
        _ = try ok(["init", "--home", dir + "/gus", "--name", "gus"])
        let created = try JSON.parse(try ok(["group", "create", "--home", home, "list", "--json"]))
        let emitted = try JSON.parse(
            try TestSupport.python("peerlog_channel.py", ["--emit-certificate", "--seed", "2d"]))
        guard case .string(let group)? = created["id"], case .string(let identity)? = emitted["identity"],
            case .string(let gus)? = try JSON.parse(try ok(["id", "--home", dir + "/gus", "--json"]))["device"]
        else {
            Issue.record("no group, python identity or device id")
            return
        }
        _ = try ok(["group", "add", "--home", home, group, identity])
        let daemon = try DaemonProcess(home: home)
        defer { daemon.stop() }
        func connect(_ extra: [String]) throws -> TestSupport.ProcessResult {
            try TestSupport.run(
                TestSupport.python,
                [TestSupport.repoRoot + "/tools/interop/peerlog_channel.py", "--seed", "2d", "--expect", "1"] + extra
                    + ["connect", "127.0.0.1", String(daemon.port)])
        }
        let honest = try connect([])
        #expect(honest.status == 0, "\(honest.stderr)")
        #expect(honest.stdout.contains("\"message\""), "\(honest.stdout)")
        let forged = try connect(["--claim-device", gus])
        #expect(forged.status != 0)
        #expect(forged.stderr.contains("device \(gus): the device key's proof does not verify"), "\(forged.stderr)")
        #expect(
            TestSupport.waitUntil(timeout: 60) { daemon.stderr.contains("the device key's proof does not verify") },
            "\(daemon.stderr)")
        #expect(daemon.isRunning)
    }

    /// A peer from before encrypted groups (this Python peer lists no `encrypted_groups`) is
    /// offered an encrypted group only to be told, with `unshared`, why it cannot have it; it is
    /// sent no receipt of it (docs/PROTOCOL.md §22.5).
    @Test func aPeerWithoutTheEncryptedGroupsCapabilityIsToldWhyAndSentNothing() throws {
        let home = dir + "/erin"
        _ = try ok(["init", "--home", home, "--name", "erin"])
        let created = try JSON.parse(try ok(["group", "create", "--home", home, "sealed", "--json"]))
        guard case .string(let group)? = created["id"] else {
            Issue.record("no group id")
            return
        }
        let seed = "1c"
        guard
            case .string(let identity)? = try JSON.parse(
                try TestSupport.python("sync_client.py", ["identity", "--seed", seed]))["identity"]
        else {
            Issue.record("no python identity")
            return
        }
        _ = try ok(["group", "add", "--home", home, group, identity])
        _ = try ok(["put", "--home", home, group, "k", "1"])
        let daemon = try DaemonProcess(home: home)
        defer { daemon.stop() }
        let out = try JSON.parse(
            try TestSupport.python(
                "sync_client.py",
                ["fetch", "127.0.0.1", String(daemon.port), "--seed", seed, "--group", group, "--to", "3"]))
        guard case .string(let why)? = out["unshared"] else {
            Issue.record("the old peer was not told: \(out)")
            return
        }
        #expect(why.contains("encrypted_groups"), "\(why)")
        #expect(out["receipts"] == .int(0), "\(out)")
    }

    /// Conditional, atomic, counter, set and field writes (docs/PROTOCOL.md §9.7), some rejected
    /// at commit: the Python peer folds the committed log it fetched with its own implementation
    /// of §9, §9.7 and §12 (tools/interop/state_fold.py) and reaches the daemon's state hash.
    @Test func pythonPeerFoldsConditionalWritesToTheSameStateHash() throws {
        let selftest = try TestSupport.python("state_fold.py", ["selftest"])
        #expect(selftest.contains("all checks passed"), "\(selftest)")
        let home = dir + "/fold"
        _ = try ok(["init", "--home", home, "--name", "fold"])
        let created = try JSON.parse(try ok(["group", "create", "--home", home, "team", "--json", "--plaintext"]))
        guard case .string(let group)? = created["id"] else {
            Issue.record("no group id")
            return
        }
        let seed = "2a"
        guard
            case .string(let identity)? = try JSON.parse(
                try TestSupport.python("sync_client.py", ["identity", "--seed", seed]))["identity"]
        else {
            Issue.record("no python identity")
            return
        }
        _ = try ok(["group", "add", "--home", home, group, identity])
        func write(_ args: [String], status: Int32) throws {
            let r = try TestSupport.peerlog(Array(args.prefix(1)) + ["--home", home, group] + Array(args.dropFirst()))
            #expect(r.status == status, "\(args): \(r.stdout)\(r.stderr)")
        }
        try write(["put", "slot/9", "ann", "--if-absent"], status: 0)
        try write(["put", "slot/9", "bob", "--if-absent"], status: 3)
        try write(["incr", "booked", "--by", "4"], status: 0)
        try write(["incr", "booked", "--by", "-1"], status: 0)
        try write(["set-add", "tags", "b", "a", "--json-value", "1", "\"z\""], status: 1)  // not JSON: refused
        try write(["set-add", "tags", "--json-value", "\"b\"", "1", "[2]", "{\"x\":true}"], status: 0)
        try write(["set-remove", "tags", "--json-value", "1"], status: 0)
        try write(["merge", "card", "title=plan", "owner=ann"], status: 0)
        try write(["merge", "card", "--remove", "owner"], status: 0)
        try write(["incr", "card"], status: 3)
        try write(["put", "slot/9", "cy", "--if-value", "ann"], status: 0)
        let batch = dir + "/fold.jsonl"
        try """
        {"key": "a", "value": 1, "if": "absent"}
        {"key": "slot/9", "delete": true, "if_value": "nobody"}
        """.write(toFile: batch, atomically: true, encoding: .utf8)
        try write(["put", "--batch", batch, "--atomic"], status: 3)
        try write(["put", "--batch", batch], status: 3)

        let daemon = try DaemonProcess(home: home)
        defer { daemon.stop() }
        let out = try TestSupport.python(
            "sync_client.py",
            [
                "fetch", "127.0.0.1", String(daemon.port), "--seed", seed, "--group", group, "--from", "1", "--to",
                "2", "--state-hash",
            ])
        let summary = try JSON.parse(out)
        let hashes = try JSON.parse(try ok(["state-hash", "--home", home, group, "--json"]))
        guard case .string(let python)? = summary["state_hash"], case .string(let swift)? = hashes["committed"] else {
            Issue.record("no hashes: \(out) \(hashes)")
            return
        }
        #expect(python == swift, "the Python fold differs: \(out)")
        // It saw the rejections too (four writes rejected at commit).
        guard case .array(let rejected)? = summary["state_rejected"] else {
            Issue.record("no state_rejected: \(out)")
            return
        }
        #expect(rejected.count == 4, "\(out)")
    }
}
