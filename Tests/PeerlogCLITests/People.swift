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
