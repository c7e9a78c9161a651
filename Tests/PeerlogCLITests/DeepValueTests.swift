import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// A value nested too deep is refused before it is signed, with the same limit and the same
/// one-line reason in an encrypted group as in a plaintext one: never acknowledged and then
/// rejected by every member once opened (issue 32, item 2).
@Suite(.serialized)
struct DeepValueTests {
    func nested(_ levels: Int) -> String {
        String(repeating: "{\"a\":", count: levels) + "1" + String(repeating: "}", count: levels)
    }

    @Test(arguments: [false, true]) func aTooDeepValueIsRefusedUpFrontInBothKindsOfGroup(encrypted: Bool) throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ann = try makePerson("ann", in: dir)
        let group = try createGroup(ann.home, "g", plaintext: !encrypted)
        // The deepest a value may nest (Receipt.maxBodyDepth): written, committed and read back.
        try expectPeerlog(["put", "--home", ann.home, group, "ok", nested(16), "--json-value"])
        #expect(try expectPeerlog(["get", "--home", ann.home, group, "ok"]).contains(nested(16)))
        let logBefore = try expectPeerlog(["log", "--home", ann.home, group, "--json"])

        // One level more: one line, exit 1, nothing written.
        for levels in [17, 18] {
            let r = try TestSupport.peerlog(["put", "--home", ann.home, group, "deep", nested(levels), "--json-value"])
            #expect(r.status == 1, "put of \(levels) levels: \(r.status) \(r.stdout)")
            #expect(r.stderr.contains("over the limit of 17"), "\(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1)
        }
        #expect(try expectPeerlog(["log", "--home", ann.home, group, "--json"]) == logBefore)
        #expect(try TestSupport.peerlog(["get", "--home", ann.home, group, "deep"]).status != 0)
        #expect(try expectPeerlog(["check", "--home", ann.home]).isEmpty == false)
    }
}
