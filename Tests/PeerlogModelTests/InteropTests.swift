import Foundation
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Receipts cross between Peerlog and the independent Python implementation of docs/PROTOCOL.md.
struct InteropTests {
    @Test func pythonReceiptIsAcceptedWithTheSameCID() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for parents in [0, 3] {
            let path = dir + "/py-\(parents).receipt"
            let made = try JSON.parse(try TestSupport.python("receipt_interop.py", ["make", path, String(parents)]))
            let r = try Receipt(encoded: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            #expect(r.verify() == .valid)
            #expect(made["cid"] == .string(r.cid.string))
            #expect(made["device"] == .string(TestSupport.hex(r.author.bytes)))
            #expect(r.parents.count == parents)
            #expect(made["parents"] == .array(r.parents.map { .string($0.string) }))
            #expect(r.body["text"] == "made in Python")
        }
    }

    @Test func peerlogReceiptIsVerifiedByPython() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let device = try LocalDevice.generate(name: "swift", createdAt: 1)
        let r = try device.sign(
            Receipt.Draft(
                group: .random(), type: "app.note", counter: 4, parents: [CID(hashing: [1]), CID(hashing: [2])],
                hlc: HLCTimestamp(physical: 99, logical: 3), body: .textMap(["msg": "from swift", "n": .int(-3)])))
        let path = dir + "/swift.receipt"
        try Data(r.encoded).write(to: URL(fileURLWithPath: path))
        let out = try JSON.parse(try TestSupport.python("receipt_interop.py", ["verify", path]))
        #expect(out["valid"] == .bool(true))
        #expect(out["cid"] == .string(r.cid.string))
        #expect(out["counter"] == .number("4"))
        // And a tampered signature is caught by Python too.
        var bad = r.signature
        bad[1] ^= 4
        let badReceipt = try Receipt(payload: r.payload, signature: bad, certificate: r.certificate)
        try Data(badReceipt.encoded).write(to: URL(fileURLWithPath: path), options: .atomic)
        #expect(
            try JSON.parse(try TestSupport.python("receipt_interop.py", ["verify", path]))["valid"] == .bool(false))
    }
}
