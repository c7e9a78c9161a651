import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// A group whose state is over 4 MiB (issue 34, item 7): its snapshot no longer fits in one
/// message, so the owner's daemon sends it as a blob the `snapshot` message references, and a
/// new member's daemon fetches and checks the blob, then starts from it (docs/PROTOCOL.md §23.3)
/// instead of replaying the log. Real daemons on loopback.
@Suite(.serialized)
struct SnapshotBlobTests {
    @Test(arguments: [false, true])
    func aNewMemberOfAGroupOver4MiBStartsFromASnapshotSentAsABlob(encrypted: Bool) throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ann = try makePerson("ann", in: dir)
        let bob = try makePerson("bob", in: dir)
        guard
            case .string(let group)? = try peerlogJSON(
                ["group", "create", "--home", ann.home, "album", "--json"] + (encrypted ? [] : ["--plaintext"]))["id"]
        else { throw TestSupport.ProcessError(description: "no group id") }
        try expectPeerlog(["group", "add", "--home", ann.home, group, bob.identity])
        // 90 values of 60,000 bytes: about 5.4 MB of state, each value in its own receipt.
        let batch = dir + "/batch.jsonl"
        let lines = (0..<90).map { i in
            "{\"key\": \"photo/\(i)\", \"value\": \"\(String(repeating: String(i % 10), count: 60_000))\"}"
        }
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: batch))
        try expectPeerlog(["put", "--home", ann.home, group, "--batch", batch])
        let made = try peerlogJSON(["group", "snapshot", group, "--home", ann.home])
        guard case .number(let seqText)? = made["seq"], let seq = Int(seqText) else {
            throw TestSupport.ProcessError(description: "no snapshot seq in \(made)")
        }
        guard case .number(let bytesText)? = made["bytes"] ?? made["size"], let bytes = Int(bytesText) else {
            throw TestSupport.ProcessError(description: "no snapshot size in \(made)")
        }
        #expect(bytes > 4_063_232, "the snapshot is \(bytes) bytes: it must not fit in a message")

        let a = try DaemonProcess(home: ann.home)
        let b = try DaemonProcess(home: bob.home, arguments: ["--peer", a.address, "--allow", ann.identity])
        defer {
            a.stop()
            b.stop()
        }
        func floor() -> JSON? { try? peerlogJSON(["group", "show", group, "--home", bob.home])["floor"] }
        #expect(
            TestSupport.waitUntil(timeout: 120) { floor() == .number(String(seq)) },
            "bob's floor is \(String(describing: floor())), not \(seq)\n\(b.stderr.suffix(3_000))")
        #expect(b.stderr.contains("sent as blob"), "bob fetched a snapshot blob: \(b.stderr.suffix(2_000))")
        let hashes = try [ann.home, bob.home].map { try expectPeerlog(["state-hash", group, "--home", $0]) }
        #expect(hashes[0] == hashes[1])
        #expect(try TestSupport.peerlog(["check", "--home", bob.home]).status == 0)
        // Bob holds the anchor and the key history, not the 90 receipts below the snapshot.
        guard
            case .array(let items) = try JSON.parse(
                try expectPeerlog(["log", group, "--committed", "--home", bob.home, "--json"]))
        else { throw TestSupport.ProcessError(description: "bob's log is not an array") }
        #expect(items.count < 10, "bob holds \(items.count) committed receipts")
    }
}
