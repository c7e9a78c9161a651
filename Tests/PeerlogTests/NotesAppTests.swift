import Foundation
import PeerlogTestSupport
import Testing

/// `peerlog-notes` driven as a person would: commands typed in, the screen read back.
final class NotesProcess: @unchecked Sendable {
    private let process: ChildProcess
    private let dir: String

    init(_ arguments: [String]) throws {
        dir = try TestSupport.temporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir + "/out", contents: nil)
        let binary = URL(fileURLWithPath: TestSupport.peerlogBinary).deletingLastPathComponent().appendingPathComponent(
            "peerlog-notes")
        process = try ChildProcess(
            binary.path, arguments, pipeInput: true, stdout: dir + "/out", stderr: dir + "/out", lifetime: 300)
    }

    var screen: String { (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? "" }

    /// Types a line; nothing when the app has exited (the pipe is closed).
    func type(_ line: String) {
        signal(SIGPIPE, SIG_IGN)
        guard process.isRunning else { return }
        try? process.input?.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Waits (bounded) until the screen holds a line for which `match` is true; returns it.
    @discardableResult
    func waitForLine(timeout: TimeInterval = 30, _ match: (String) -> Bool) -> String? {
        var found: String?
        _ = TestSupport.waitUntil(timeout: timeout) {
            found = screen.split(separator: "\n").map(String.init).first(where: match)
            return found != nil
        }
        return found
    }

    /// `quit`, then the exit status (SIGKILL after the timeout).
    func quit(timeout: TimeInterval = 20) -> Int32 {
        type("quit")
        return process.wait(timeout: timeout)
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }
}

@Suite struct NotesAppTests {
    @Test func twoLaptopsShareAListAndATentativeItemTurnsCommittedOnScreen() throws {
        // Port 0: the system picks a free one; the app prints what it bound.
        let ann = try NotesProcess([
            "--home", try TestSupport.temporaryDirectory(), "--name", "ann", "--listen", "127.0.0.1:0",
            "--no-discovery",
        ])
        let annID = try #require(ann.waitForLine { $0.hasPrefix("identity: ") }).dropFirst("identity: ".count)
        let listening = try #require(ann.waitForLine { $0.hasPrefix("listening on 127.0.0.1:") }, "\(ann.screen)")
        let port = try #require(Int(listening.dropFirst("listening on 127.0.0.1:".count)))
        let ben = try NotesProcess([
            "--home", try TestSupport.temporaryDirectory(), "--name", "ben", "--no-listen",
            "--peer", "127.0.0.1:\(port)", "--allow", String(annID), "--no-discovery",
        ])
        let benID = try #require(ben.waitForLine { $0.hasPrefix("identity: ") }).dropFirst("identity: ".count)

        ann.type("new groceries")
        ann.type("invite \(benID)")
        #expect(ann.waitForLine { $0.hasPrefix("invited ") } != nil, "\(ann.screen)")
        #expect(ben.waitForLine { $0.hasPrefix("invited to groceries") } != nil, "\(ben.screen)")
        ben.type("accept")
        #expect(ben.waitForLine { $0 == "joined groceries" } != nil, "\(ben.screen)")
        ben.type("add buy milk")
        // Ben's screen: first tentative (ann's device orders the list), then committed.
        #expect(ben.waitForLine { $0 == "1. [ ] buy milk  (tentative)" } != nil, "\(ben.screen)")
        #expect(ben.waitForLine { $0 == "1. [ ] buy milk" } != nil, "\(ben.screen)")
        // Ann's screen shows it live, and her change to it reaches Ben.
        #expect(ann.waitForLine { $0 == "1. [ ] buy milk" } != nil, "\(ann.screen)")
        ann.type("done 1")
        #expect(ben.waitForLine { $0 == "1. [x] buy milk" } != nil, "\(ben.screen)")
        // A claim: Ann's device orders the list, so hers is decided at once; Ben's second claim
        // is rejected where it is ordered, and Ben is told.
        ann.type("claim 1")
        #expect(ann.waitForLine { $0 == "claimed 1" } != nil, "\(ann.screen)")
        #expect(ben.waitForLine { $0 == "1. [x] buy milk  @ann" } != nil, "\(ben.screen)")
        ben.type("claim 1")
        #expect(
            ben.waitForLine {
                $0.hasPrefix("! 1 looks taken: condition 1 failed")
                    || $0.hasPrefix("! a write was rejected: condition 1 failed")
            }
                != nil, "\(ben.screen)")
        #expect(ann.quit() == 0)
        #expect(ben.quit() == 0)
    }

    @Test func badOptionsExitWithUsage() throws {
        let bad = try NotesProcess(["--frobnicate"])
        #expect(bad.waitForLine { $0.contains("unknown option --frobnicate") } != nil)
        #expect(bad.quit() == 2)
        #expect(bad.screen.contains("usage: peerlog-notes"))
    }
}
