import Foundation
import PeerlogTestSupport
import Testing

/// Start-up cost: a command without an explicit `commandName` makes ArgumentParser derive it
/// with `String(describing:)` on every run, a dynamic cast that scans every protocol
/// conformance of the binary once per command type (about 2.5 ms of a 12 ms `peerlog --version`).
struct CommandNamesTests {
    @Test func everyCommandNamesItself() throws {
        let dir = TestSupport.repoRoot + "/Sources/PeerlogCLI"
        var unnamed = [String]()
        var seen = 0
        for file in try FileManager.default.contentsOfDirectory(atPath: dir) where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: dir + "/" + file, encoding: .utf8)
            var rest = text[...]
            while let start = rest.range(of: "configuration = CommandConfiguration(") {
                seen += 1
                // The arguments up to the matching parenthesis.
                var depth = 1
                var end = start.upperBound
                while depth > 0, end < rest.endIndex {
                    if rest[end] == "(" { depth += 1 } else if rest[end] == ")" { depth -= 1 }
                    end = rest.index(after: end)
                }
                if !rest[start.upperBound..<end].contains("commandName:") {
                    let line = text[..<start.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).count
                    unnamed.append("\(file):\(line)")
                }
                rest = rest[end...]
            }
        }
        #expect(seen > 50, "found only \(seen) command configurations in \(dir)")
        #expect(unnamed.isEmpty, "give these commands a commandName: \(unnamed)")
    }
}
