import Testing

@testable import PeerlogDiscovery

@Suite struct TXTRecordTests {
    @Test func encodesSortedLengthPrefixedPairs() {
        let bytes = TXTRecord.encode(["v": "1", "dev": "ab"])
        #expect(bytes == [6] + Array("dev=ab".utf8) + [3] + Array("v=1".utf8))
    }

    @Test func roundTripsEqualsSignsAndEmptyValues() {
        let txt = ["id": "a=b==c", "empty": "", "net": "ünïcode", "x": "="]
        #expect(TXTRecord.decode(TXTRecord.encode(txt)) == txt)
    }

    @Test func emptyDictionaryIsOneEmptyString() {
        #expect(TXTRecord.encode([:]) == [0])
        #expect(TXTRecord.decode([0]) == [:])
        #expect(TXTRecord.decode([]) == [:])
    }

    @Test func dropsEntriesThatCannotBeEncoded() {
        let long = String(repeating: "a", count: 253)  // "k=" + 253 bytes = 255: fits
        let txt = ["": "no key", "a=b": "key with =", "k": long, "l": long + "b", "tab\t": "control char"]
        #expect(TXTRecord.decode(TXTRecord.encode(txt)) == ["k": long])
    }

    @Test func keyWithoutEqualsMapsToEmptyValue() {
        #expect(TXTRecord.decode([4] + Array("flag".utf8) + [3] + Array("a=1".utf8)) == ["flag": "", "a": "1"])
    }

    @Test func firstOfRepeatedKeysWinsCaseInsensitively() {
        let bytes: [UInt8] = [3] + Array("a=1".utf8) + [3] + Array("A=2".utf8) + [3] + Array("a=3".utf8)
        #expect(TXTRecord.decode(bytes) == ["a": "1"])
    }

    @Test func malformedBytesDecodeWhatIsWellFormed() {
        // A length running past the end stops decoding; what came before is kept.
        #expect(TXTRecord.decode([3] + Array("a=1".utf8) + [9] + Array("b=2".utf8)) == ["a": "1"])
        #expect(TXTRecord.decode([255]) == [:])
        // Empty strings and empty keys are skipped.
        #expect(TXTRecord.decode([0, 2] + Array("=x".utf8) + [0, 3] + Array("k=v".utf8)) == ["k": "v"])
        // Invalid UTF-8 is replaced, not rejected.
        #expect(TXTRecord.decode([4, UInt8(ascii: "k"), UInt8(ascii: "="), 0xFF, 0xFE]) == ["k": "\u{FFFD}\u{FFFD}"])
    }

    @Test func peerlogTXTOmitsEmptyNetwork() {
        #expect(PeerlogDNSSD.txt(device: "d", identity: "i", network: "") == ["v": "1", "dev": "d", "id": "i"])
        #expect(PeerlogDNSSD.txt(device: "d", identity: "i", network: "n")["net"] == "n")
    }
}
