import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

struct CBORPropertyTests {
    @Test func randomRoundTrip() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["PEERLOG_SEED"] ?? "") ?? 0x5eed
        var gen = CBORGenerator(rng: SeededRandom(seed: seed))
        for i in 0..<5_000 {
            let value = gen.value()
            let bytes = CBOREncoder.encode(value)
            let decoded: CBOR
            do { decoded = try CBORDecoder.decodeStrict(bytes) } catch {
                Issue.record(
                    "seed \(seed) item \(i): strict decoder refused our own encoding: \(error) \(TestSupport.hex(bytes))"
                )
                return
            }
            #expect(CBOREncoder.encode(decoded) == bytes, "seed \(seed) item \(i)")
            #expect(decoded == value, "seed \(seed) item \(i)")
        }
    }

    /// Our encoder and cbor2's canonical mode produce the same bytes, in both directions.
    @Test func crossCheckWithCbor2() throws {
        var gen = CBORGenerator(rng: SeededRandom(seed: 77), interop: true)
        let ours = (0..<400).map { _ in TestSupport.hex(CBOREncoder.encode(gen.value())) }
        let input = String(decoding: try JSONEncoder().encode(ours), as: UTF8.self)
        let theirs = try JSONDecoder().decode(
            [String].self, from: Data(try TestSupport.python("cbor_check.py", ["reencode"], input: input).utf8))
        #expect(theirs.count == ours.count)
        for (a, b) in zip(ours, theirs) { #expect(a == b) }

        let generated = try JSONDecoder().decode(
            [String].self,
            from: Data(try TestSupport.python("cbor_check.py", ["generate"], input: #"{"seed": 5, "count": 400}"#).utf8)
        )
        #expect(generated.count == 400)
        for hex in generated {
            let bytes = TestSupport.bytes(hex: hex)
            do {
                #expect(CBOREncoder.encode(try CBORDecoder.decodeStrict(bytes)) == bytes)
            } catch {
                Issue.record("cbor2 canonical output refused: \(error) \(hex)")
            }
        }
    }

    /// cbor2's "canonical" is RFC 7049 (length-first); ours is RFC 8949 (bytewise). Pin the difference.
    @Test func mapOrderDiffersFromRFC7049Canonical() throws {
        let value = CBOR.map([.int(-1): 1, .unsigned(24): 2])
        let ours = TestSupport.hex(CBOREncoder.encode(value))
        #expect(ours == "a21818022001")
        let theirs = try TestSupport.python("cbor_check.py", ["order"], input: "[\"\(ours)\"]")
        #expect(theirs.contains("a22001181802"))
    }

    @Test func diagnosticNotation() {
        let v: CBOR = .map([
            "a": .array([1, .int(-2), .bytes([0, 0xff]), .float(1.5), .float(.nan), .null, .undefined]),
            .unsigned(1): .tagged(42, .text("x\"\n")),
            "b": .simple(16),
        ])
        #expect(
            v.diagnostic() == #"{1: 42("x\"\n"), "a": [1, -2, h'00ff', 1.5, NaN, null, undefined], "b": simple(16)}"#)
        #expect(CBOR.negative(.max).diagnostic() == "-18446744073709551616")
        #expect(CBOR.float(100_000).diagnostic() == "100000.0")
        #expect(CBOR.array([1, 2]).diagnostic(pretty: true) == "[\n  1,\n  2\n]")
    }
}
