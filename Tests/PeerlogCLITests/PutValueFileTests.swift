import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// `put --value-file FILE|-`, and the 64 KiB payload limit at its boundary (a file over 16 KiB
/// is a blob: BlobTests).
/// Plaintext groups: the limit is of the receipt, which sealing makes larger (PROTOCOL §22.3).
struct PutValueFileTests {
    static let payloadLimit = 65_536

    @Test func valuesJustUnderAndJustOverThePayloadLimit() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("v", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home, "--plaintext"])
        // From standard input: a value as it is (a file over 16 KiB would be stored as a blob).
        func put(_ length: Int) throws -> TestSupport.ProcessResult {
            try TestSupport.run(
                TestSupport.peerlogBinary, ["put", "g", "k", "--value-file", "-", "--home", home],
                input: String(repeating: "a", count: length))
        }
        // The error names the payload size, which tells the size of everything around the value
        // (a text of 256...65,535 bytes has a 3-byte CBOR head, a longer one 5 bytes).
        let probe = try put(70_000)
        let size = try #require(
            probe.stderr.firstMatch(of: /would be (\d+) bytes/).flatMap { Int($0.1) }, "\(probe.stderr)")
        let largest = Self.payloadLimit - (size - 70_000 - 5) - 3

        let over = try put(largest + 1)
        #expect(over.status != 0)
        #expect(
            over.stderr.contains(
                "would be \(Self.payloadLimit + 1) bytes, over the limit of \(Self.payloadLimit) bytes"),
            "\(over.stderr)")
        #expect(
            over.stderr.contains("split the value") && over.stderr.contains("as a blob"),
            "says what to do instead: \(over.stderr)")
        #expect(over.stderr.split(separator: "\n").count == 1, "one line: \(over.stderr)")

        let under = try put(largest)
        #expect(under.status == 0, "\(under.stderr)")
        #expect(try expectPeerlog(["get", "g", "k", "--home", home]) == String(repeating: "a", count: largest) + "\n")
    }

    @Test func jsonValueFromStandardInputAndMisuse() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("v", in: dir)
        try expectPeerlog(["group", "create", "g", "--home", home, "--plaintext"])
        // 60,000 bytes as hex JSON: 120 KiB of text, close to the kernel's cap on one argument.
        let hex = String(repeating: "0a1b", count: 30_000)
        let json = #"{"blob": {"$bytes": ""# + hex + #""}, "n": [1, 2]}"# + "\n"
        let r = try TestSupport.run(
            TestSupport.peerlogBinary, ["put", "g", "k", "--value-file", "-", "--json-value", "--home", home],
            input: json)
        #expect(r.status == 0, "\(r.stderr)")
        let got = try peerlogJSON(["get", "g", "k", "--home", home])
        #expect(got["value"]?["blob"]?["$bytes"] == .string(hex))
        #expect(got["value"]?["n"] == .array([.int(1), .int(2)]))

        for (args, message) in [
            (["put", "g", "k", "v", "--value-file", "-"], "not both"), (["put", "g", "k"], "VALUE or --value-file"),
            (["put", "g", "k", "--value-file", dir + "/absent"], "No such file"),
        ] {
            let bad = try TestSupport.peerlog(args + ["--home", home])
            #expect(
                bad.status != 0 && bad.stderr.contains(message) && bad.stderr.split(separator: "\n").count == 1,
                "\(args): \(bad.stderr)")
        }
    }
}
