import Foundation
import PeerlogCapture
import PeerlogChannel
import PeerlogEncoding
import PeerlogModel
import PeerlogSync
import PeerlogTestSupport

enum Fixtures {
    static let alice = try! LocalDevice.deterministic(
        seed: Array(repeating: 1, count: 32), name: "alice", createdAt: 1_700_000_000_000)
    static let bob = try! LocalDevice.deterministic(
        seed: Array(repeating: 2, count: 32), name: "bob", createdAt: 1_700_000_000_000)
    static let group = try! GroupID(bytes: Array(0..<16))

    static func receipt(counter: UInt64, body: CBOR = .textMap(["key": "k", "value": "v"])) throws -> Receipt {
        try alice.sign(
            Receipt.Draft(
                group: group, type: "entity.put", counter: counter,
                hlc: HLCTimestamp(physical: 1_700_000_000_000 + counter, logical: 0), body: body))
    }

    static func record(_ i: Int, data: [UInt8], kind: CaptureRecord.Kind = .message) -> CaptureRecord {
        CaptureRecord(
            time: 1_700_000_000_000_000 + UInt64(i) * 1500, kind: kind, direction: i % 2 == 0 ? .inbound : .outbound,
            connection: UInt64(1 + i % 3), local: alice.device, peer: bob.device, data: data)
    }

    static func temporaryFile(_ name: String) -> String {
        let dir = FileManager.default.temporaryDirectory.path + "/peerlog-capture-tests-\(getpid())"
        if (try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)) != nil {
            TestSupport.removeAtExit(dir)
        }
        return dir + "/" + name
    }

    /// Writes records with `CaptureWriter` and returns the file's bytes.
    static func written(
        _ records: [CaptureRecord], options: CaptureWriter.Options = .init(), name: String = UUID().uuidString
    ) throws -> (path: String, bytes: [UInt8]) {
        let path = temporaryFile(name + ".pcapng")
        let w = try CaptureWriter(path: path, options: options)
        for r in records { if let e = w.write(r) { throw e } }
        w.close()
        return (path, Array(FileManager.default.contents(atPath: path)!))
    }
}
