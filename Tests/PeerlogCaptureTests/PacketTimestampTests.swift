import PeerlogCapture
import Testing

@testable import PeerlogCaptureTools

/// A pcapng whose interface counts whole seconds (`if_tsresol` 0: 10^0 per second) and whose
/// packet claims 2^63 of them: more microseconds than 64 bits hold. Found by FuzzCaptureFiles
/// (it trapped converting the Double); now one clear error at the timestamp's offset.
@Suite struct PacketTimestampTests {
    func le32(_ v: UInt32) -> [UInt8] {
        [UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24)]
    }
    func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
    func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
        let length = UInt32(12 + body.count)
        return le32(type) + le32(length) + body + le32(length)
    }

    func file(seconds: UInt64) -> [UInt8] {
        let shb = block(0x0A0D_0D0A, le32(0x1A2B_3C4D) + le16(1) + le16(0) + [UInt8](repeating: 0xff, count: 8))
        // IDB: link type 147 (user 0), reserved, snaplen; option 9 (if_tsresol) = 0, then end of options.
        let idb = block(1, le16(147) + le16(0) + le32(65_535) + le16(9) + le16(1) + [0, 0, 0, 0] + le16(0) + le16(0))
        let data: [UInt8] = [1, 2, 3, 4]
        let epb = block(
            6, le32(0) + le32(UInt32(seconds >> 32)) + le32(UInt32(seconds & 0xffff_ffff)) + le32(4) + le32(4) + data)
        return shb + idb + epb
    }

    @Test func aTimestampBeyond64BitsOfMicrosecondsIsAnErrorNotATrap() throws {
        #expect(throws: CaptureError.self) { try PacketFile(bytes: file(seconds: 1 << 63)) }
        // The same file with a representable time reads, in microseconds.
        let ok = try PacketFile(bytes: file(seconds: 1_700_000_000))
        #expect(ok.packets.first?.time == 1_700_000_000_000_000)
    }

    @Test func theConversionIsExactAtItsBoundary() throws {
        // Whole seconds: the largest count that fits, and one more.
        #expect(try PacketFile.microseconds(18_446_744_073_709, perSecond: 1, at: 0) == 18_446_744_073_709_000_000)
        #expect(throws: CaptureError.self) { try PacketFile.microseconds(18_446_744_073_710, perSecond: 1, at: 0) }
        // Nanoseconds round to the nearest microsecond; the largest count cannot overflow.
        #expect(try PacketFile.microseconds(1_499, perSecond: 1_000_000_000, at: 0) == 1)
        #expect(try PacketFile.microseconds(1_500, perSecond: 1_000_000_000, at: 0) == 2)
        // ...551,615 ns rounds up
        #expect(try PacketFile.microseconds(.max, perSecond: 1_000_000_000, at: 0) == UInt64.max / 1_000 + 1)
        // Binary resolutions (2^-10 s) go through Double, still bounded.
        #expect(try PacketFile.microseconds(1_024, perSecond: 1_024, at: 0) == 1_000_000)
        #expect(throws: CaptureError.self) { try PacketFile.microseconds(.max, perSecond: 1_024, at: 0) }
    }
}
