import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// `peerlog put GROUP --batch - --stream`: each line stored and acknowledged while the producer
/// keeps its pipe open, and sent on by a connected daemon before the input ends.
struct PutStreamTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    /// A `put --stream` process fed through a pipe, its acknowledgements in a file.
    struct Stream {
        let process: ChildProcess
        let out: String
        let err: String

        init(_ args: [String], dir: String) throws {
            out = dir + "/stream.out"
            err = dir + "/stream.err"
            process = try ChildProcess(
                TestSupport.peerlogBinary, args, pipeInput: true, stdout: out, stderr: err, lifetime: 300)
        }

        func send(_ text: String) { process.input!.write(Data(text.utf8)) }
        var acks: [JSON] {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
        }
        /// Waits (bounded) until `count` lines are acknowledged.
        func waitForAcks(_ count: Int) -> Bool { TestSupport.waitUntil(timeout: 60) { acks.count >= count } }
    }

    @Test func eachLineIsStoredAndAcknowledgedBeforeTheInputEndsAndABadLineStopsIt() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("a", in: dir)
        let group = try createGroup(home, "g", plaintext: true)
        let s = try Stream(["put", group, "--batch", "-", "--stream", "--json", "--home", home], dir: dir)
        s.send(#"{"key": "first", "value": 1}"# + "\n")
        #expect(s.waitForAcks(1), "no acknowledgement: \(s.acks)")
        // Stored while the stream is still open: another process reads it.
        #expect(s.process.isRunning)
        #expect(peerlogValue(home, group, "first") == "1")
        let first = s.acks[0]
        #expect(first["line"] == .int(1) && first["key"] == .string("first") && first["status"] == .string("committed"))

        // Two lines in one read, a blank line between: numbered as in the input.
        s.send(#"{"key": "second", "value": "two"}"# + "\n\n" + #"{"key": "first", "delete": true}"# + "\n")
        #expect(s.waitForAcks(3), "acknowledgements: \(s.acks)")
        #expect(s.acks.map { $0["line"] } == [.int(1), .int(2), .int(4)])
        #expect(peerlogValue(home, group, "second") == "two" && peerlogValue(home, group, "first") == nil)

        // A line split across two writes of the producer is one line.
        s.send(#"{"key": "split", "#)
        usleep(200_000)
        s.send(#""value": true}"# + "\n")
        #expect(s.waitForAcks(4), "acknowledgements: \(s.acks)")
        #expect(peerlogValue(home, group, "split") == "true")

        // A bad line stops the stream with one error naming it; nothing after it is written.
        s.send(
            #"{"key": "ok", "value": 5}"# + "\n" + #"{"key": "bad"}"# + "\n" + #"{"key": "after", "value": 6}"# + "\n")
        let status = s.process.wait(timeout: 60)
        let err = (try? String(contentsOfFile: s.err, encoding: .utf8)) ?? ""
        #expect(status == 1, "exit \(status): \(err)")
        #expect(err.split(separator: "\n").count == 1 && err.contains("line 7:") && err.contains("missing \"value\""))
        #expect(err.contains("5 lines were written before it"), "\(err)")
        #expect(peerlogValue(home, group, "ok") == "5" && peerlogValue(home, group, "after") == nil)
        #expect(s.acks.count == 5)
    }

    @Test func refusesWhatNeedsTheWholeInput() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (home, _) = try makePerson("a", in: dir)
        let group = try createGroup(home, "g", plaintext: true)
        for (args, message) in [
            (["--stream"], "--stream goes with --batch"),
            (["--batch", "-", "--stream", "--atomic"], "--atomic needs the whole input"),
            (["--batch", "-", "--stream", "--wait"], "write-status"),
            (["--batch", "-", "--stream", "--if-absent"], "--if-… options take one key"),
        ] {
            let r = try TestSupport.peerlog(["put", group, "--home", home] + args)
            #expect(r.status == 1 && r.stderr.contains(message), "\(args): \(r.status) \(r.stderr)")
        }
        let huge = String(repeating: "x", count: (1 << 20) + 10)
        let r = try TestSupport.run(
            TestSupport.peerlogBinary, ["put", group, "--batch", "-", "--stream", "--home", home],
            input: #"{"key": "a", "value": 1}"# + "\n" + huge)
        #expect(r.status == 1 && r.stderr.contains("over 1048576 bytes") && r.stderr.contains("1 line"), "\(r.stderr)")
        #expect(peerlogValue(home, group, "a") == "1")
    }

    /// The stream's writes reach a connected peer's daemon while the producer still holds the pipe.
    @Test func aConnectedPeerHoldsEachLineBeforeTheStreamEnds() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("a", in: dir)
        let b = try makePerson("b", in: dir)
        let group = try makeSharedGroup(owner: a, others: [b])
        let da = try DaemonProcess(home: a.home, arguments: ["--allow", b.identity])
        defer { da.stop() }
        let db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--allow", a.identity])
        defer { db.stop() }
        #expect(acceptWhenInvited(b.home, group))
        let s = try Stream(["put", group, "--batch", "-", "--stream", "--json", "--home", a.home], dir: dir)
        for i in 1...3 {
            s.send(#"{"key": "k\#(i)", "value": \#(i)}"# + "\n")
            #expect(s.waitForAcks(i))
            #expect(
                TestSupport.waitUntil(timeout: 60) { peerlogValue(b.home, group, "k\(i)") == "\(i)" },
                "b never held k\(i): \(db.stderr)")
            #expect(s.process.isRunning)
        }
        s.process.input!.closeFile()
        #expect(s.process.wait(timeout: 60) == 0)
    }
}
