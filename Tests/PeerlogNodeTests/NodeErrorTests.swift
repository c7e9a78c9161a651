import Foundation
import Testing

@testable import PeerlogNode

/// NodeError: a code to switch on, the configuration line it names, equality on the code only.
@Suite struct NodeErrorTests {
    @Test func codesNotTextSayWhatWentWrong() throws {
        do {
            _ = try PeerAddress(parsing: "nowhere")
            Issue.record("accepted an address without a port")
        } catch let e as NodeError {
            #expect(e.code == .invalidAddress && e.description.hasPrefix("invalid address \"nowhere\": "), "\(e)")
            #expect(e == NodeError.invalidAddress("other", "other reason") && e != NodeError.controlSocket("x"))
            #expect(e.file.hasPrefix("PeerlogNode/") && e.configurationLine == nil)
        }
        let path = NSTemporaryDirectory() + "peerlog-node-error-\(UUID().uuidString).conf"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "listen = none\nloud = yes\n".write(toFile: path, atomically: true, encoding: .utf8)
        var c = NodeConfiguration()
        do {
            try c.load(file: path)
            Issue.record("accepted an unknown key")
        } catch let e as NodeError {
            #expect(e.code == .invalidConfiguration && e.configurationFile == path && e.configurationLine == 2, "\(e)")
            #expect(e.description == "\(path):2: unknown key \"loud\"")
        }
    }
}
