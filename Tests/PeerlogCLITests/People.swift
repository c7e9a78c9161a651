import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// A new identity with one device in `dir/name` (`peerlog init`), as most CLI tests start.
func makePerson(_ name: String, in dir: String) throws -> (home: String, identity: String) {
    let home = dir + "/" + name
    _ = try TestSupport.peerlogOK(["init", "--home", home, "--name", name])
    guard
        case .string(let id)? = try JSON.parse(try TestSupport.peerlogOK(["id", "--home", home, "--json"]))["identity"]
    else {
        throw TestSupport.ProcessError(description: "peerlog id printed no identity")
    }
    return (home, id)
}

/// A group "team" owned by `owner` with the others added (invited); its id.
func makeSharedGroup(
    owner: (home: String, identity: String), others: [(home: String, identity: String)],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> String {
    guard case .string(let group)? = try peerlogJSON(["group", "create", "--home", owner.home, "team"])["id"] else {
        throw TestSupport.ProcessError(description: "group create printed no id")
    }
    for o in others {
        try expectPeerlog(["group", "add", "--home", owner.home, group, o.identity], sourceLocation: sourceLocation)
    }
    return group
}

/// Runs `peerlog`, records a test issue (at the caller) unless it exits 0, returns stdout.
@discardableResult
func expectPeerlog(_ args: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    let r = try TestSupport.peerlog(args)
    #expect(r.status == 0, "peerlog \(args.joined(separator: " ")): \(r.stderr)", sourceLocation: sourceLocation)
    return r.stdout
}

/// `peerlog ARGS --json`, parsed; throws unless it exits 0.
func peerlogJSON(_ args: [String]) throws -> JSON {
    let r = try TestSupport.peerlog(args + ["--json"])
    guard r.status == 0 else { throw TestSupport.ProcessError(description: "peerlog \(args): \(r.stderr)") }
    return try JSON.parse(r.stdout)
}

/// `group create NAME` on `home`, end-to-end encrypted unless `plaintext`; its id.
func createGroup(_ home: String, _ name: String, plaintext: Bool = false) throws -> String {
    let args = ["group", "create", "--home", home, name] + (plaintext ? ["--plaintext"] : [])
    guard case .string(let id)? = try peerlogJSON(args)["id"] else {
        throw TestSupport.ProcessError(description: "group create printed no id")
    }
    return id
}

/// What `peerlog get` prints for `key` (trimmed), or nil when it fails (no such key, no key to
/// open it). `committed`: the committed view.
func peerlogValue(_ home: String, _ group: String, _ key: String, committed: Bool = false) -> String? {
    let args = ["get", "--home", home, group, key] + (committed ? ["--committed"] : [])
    guard let r = try? TestSupport.peerlog(args), r.status == 0 else { return nil }
    return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Waits (up to `timeout`) until `home` has received its invitation to `group` through a
/// running daemon, and accepts it; false when it never could.
func acceptWhenInvited(_ home: String, _ group: String, timeout: TimeInterval = 60) -> Bool {
    TestSupport.waitUntil(timeout: timeout) {
        (try? TestSupport.peerlog(["group", "accept", "--home", home, group]).status) == 0
    }
}
