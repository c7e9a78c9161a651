import PeerlogEncoding
import PeerlogTestSupport

/// A new identity with one device in `dir/name` (`peerlog init`), as most CLI tests start.
func makePerson(_ name: String, in dir: String) throws -> (home: String, identity: String) {
    let home = dir + "/" + name
    _ = try TestSupport.peerlogOK(["init", "--home", home, "--name", name])
    guard case .string(let id)? = try JSON.parse(try TestSupport.peerlogOK(["id", "--home", home, "--json"]))["identity"] else {
        throw TestSupport.ProcessError(description: "peerlog id printed no identity")
    }
    return (home, id)
}
