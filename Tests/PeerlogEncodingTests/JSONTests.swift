import PeerlogEncoding
import Testing

struct JSONTests {
    @Test func parseAndSerialize() throws {
        let text = #"{"a":[1,-2,3.5e2,true,false,null],"b":"x\"\u00e9\ud834\udd1e","big":18446744073709551616}"#
        let v = try JSON.parse(text)
        #expect(v["big"] == .number("18446744073709551616"))
        #expect(v["b"] == .string("x\"é𝄞"))
        #expect(try JSON.parse(v.serialized()) == v)
        #expect(try JSON.parse(v.serialized(pretty: true)) == v)
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "\"\u{01}\"", "{\"a\":1,\"a\":2}", "[1] 2", "\"\\ud800\"",
        "tru",
    ])
    func parseErrors(text: String) {
        #expect(throws: JSONParseError.self) { try JSON.parse(text) }
    }

    @Test func depthLimit() throws {
        #expect(throws: Never.self) {
            try JSON.parse(String(repeating: "[", count: JSON.maxDepth) + String(repeating: "]", count: JSON.maxDepth))
        }
        #expect(throws: JSONParseError.self) {
            try JSON.parse(
                String(repeating: "[", count: JSON.maxDepth + 2) + String(repeating: "]", count: JSON.maxDepth + 2))
        }
    }

    @Test func cborJSONViewRoundTrips() throws {
        let v: CBOR = .map([
            "bytes": .bytes([1, 2]), "neg": .int(-5), "max": .unsigned(.max), "min": .negative(.max),
            "link": CID(hashing: [1]).cborLink, "tag": .tagged(7, "x"), "list": [true, .null],
            "nested": .map([.unsigned(1): "non-text key"]), "simple": .simple(99), "undef": .undefined,
            "float": .float(1.5), "inf": .float(-.infinity),
        ])
        #expect(try CBOR(json: v.json) == v)
        #expect(try CBOR(json: JSON.parse(v.json.serialized())) == v)
        #expect(throws: CBOR.JSONConversionError.self) { try CBOR(json: .number("1.5"), allowFloats: false) }
        #expect(throws: CBOR.JSONConversionError.self) { try CBOR(json: .number("18446744073709551616")) }
    }
}
