import PeerlogChannel
import PeerlogTestSupport
import Testing

/// The allocation-free path: messages sealed into one caller-owned buffer, then read back
/// from caller-owned memory in chunks of any size.
@Suite struct ChannelBulkPathTests {
    @Test(arguments: [1, 3, 4096, 65537, 300_000])
    func messagesSealedIntoOneBufferAreDeliveredFromAnyChunking(chunk: Int) throws {
        var pair = ChannelPair()
        pair.connect()
        var rng = SeededRandom(seed: 7)
        let sent = [1, 65518, 65519, 200_000, 5].map { rng.bytes($0) }
        var wire = [UInt8](repeating: 0, count: sent.map { SecureChannel.wireLength(ofMessage: $0.count) }.reduce(0, +))
        var used = 0
        try wire.withUnsafeMutableBytes { out in
            for message in sent {
                let sealed = try message.withUnsafeBytes {
                    try pair.a.send($0, into: UnsafeMutableRawBufferPointer(rebasing: out[used...]))
                }
                #expect(sealed.actions.isEmpty)
                #expect(sealed.written == SecureChannel.wireLength(ofMessage: message.count))
                used += sealed.written
            }
        }
        #expect(used == wire.count)
        var delivered: [[UInt8]] = []
        wire.withUnsafeBytes { bytes in
            var start = 0
            while start < bytes.count {
                let end = min(start + chunk, bytes.count)
                for case .deliver(let m) in pair.b.receive(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) {
                    delivered.append(m)
                }
                start = end
            }
        }
        #expect(delivered == sent)
        #expect(pair.b.bufferedBytes == 0)
    }

    @Test func aTamperedFrameInTheBufferClosesTheChannel() throws {
        var pair = ChannelPair()
        pair.connect()
        let message = [UInt8](repeating: 9, count: 1000)
        var wire = [UInt8](repeating: 0, count: SecureChannel.wireLength(ofMessage: message.count))
        _ = try wire.withUnsafeMutableBytes { out in try message.withUnsafeBytes { try pair.a.send($0, into: out) } }
        wire[500] ^= 1
        let actions = wire.withUnsafeBytes { pair.b.receive($0) }
        #expect(actions.last == .closed(.protocolError("decrypt failed")))
    }
}
