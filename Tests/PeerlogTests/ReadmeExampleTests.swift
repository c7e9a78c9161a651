import Foundation
import PeerlogTestSupport
import Testing

/// The README's embedding example is a target of the package (Examples/ReadmeExample), so
/// every build compiles it; this keeps the README's copy identical to what compiles.
@Suite struct ReadmeExampleTests {
    @Test func theReadmesFirstSwiftBlockIsTheExampleThatCompiles() throws {
        let readme = try String(contentsOfFile: TestSupport.repoRoot + "/README.md", encoding: .utf8)
        let section = try #require(readme.range(of: "## Embed Peerlog in your app"))
        let rest = readme[section.upperBound...]
        let open = try #require(rest.range(of: "```swift\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        let block = String(rest[open.upperBound..<close.lowerBound])
        let example = try String(
            contentsOfFile: TestSupport.repoRoot + "/Examples/ReadmeExample/main.swift", encoding: .utf8)
        #expect(block == example)
        let lines = example.split(separator: "\n").count
        #expect(lines <= 25, "about 20 lines, as promised")
        #expect(example.split(separator: "\n").filter { $0.hasPrefix("import ") } == ["import Peerlog"])
    }
}
