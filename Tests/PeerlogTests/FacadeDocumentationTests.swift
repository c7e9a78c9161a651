import Foundation
import PeerlogTestSupport
import Testing

/// Every public declaration of the facade carries a `///` comment (DocC shows it).
@Suite struct FacadeDocumentationTests {
    @Test func everyPublicDeclarationOfThePeerlogModuleIsDocumented() throws {
        let dir = TestSupport.repoRoot + "/Sources/Peerlog"
        var missing = [String]()
        for file in try FileManager.default.contentsOfDirectory(atPath: dir).sorted() where file.hasSuffix(".swift") {
            let lines = try String(contentsOfFile: dir + "/" + file, encoding: .utf8).components(separatedBy: "\n")
            for (i, line) in lines.enumerated() where line.trimmingCharacters(in: .whitespaces).hasPrefix("public ") {
                var j = i - 1
                while j >= 0, lines[j].trimmingCharacters(in: .whitespaces).hasPrefix("@") { j -= 1 }
                if j < 0 || !lines[j].trimmingCharacters(in: .whitespaces).hasPrefix("///") {
                    missing.append("\(file):\(i + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(missing.isEmpty, "undocumented: \(missing.joined(separator: "\n"))")
    }
}
