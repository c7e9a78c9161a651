import Foundation
import PeerlogTestSupport
import Testing

/// Issue 22: a key given as invalid UTF-8 was stored with U+FFFD in place of the bad bytes.
struct InvalidUTF8ArgumentTests {
    @Test func invalidUTF8ArgumentIsRefusedAndNothingIsStored() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("u", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home])
        // Swift strings cannot hold the bytes, so a shell builds the argument (0xFF is never UTF-8).
        let r = try TestSupport.run(
            "/bin/sh", ["-c", #"exec "$0" put g "$(printf 'k\377')" v --home "$1""#, TestSupport.peerlogBinary, home])
        #expect(r.status != 0, "\(r.stdout)")
        #expect(r.stderr.contains("argument 3 (k\\xFF) is not valid UTF-8"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "one line: \(r.stderr)")
        #expect(!(try expectPeerlog(["log", "g", "--home", home])).contains("entity.put"), "nothing was stored")
        // Valid UTF-8 beyond ASCII is fine.
        try expectPeerlog(["put", "g", "ключ", "значение", "--home", home])
        #expect(try expectPeerlog(["get", "g", "ключ", "--home", home]) == "значение\n")
    }
}
