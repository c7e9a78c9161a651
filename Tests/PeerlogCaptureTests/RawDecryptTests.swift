import Foundation
import PeerlogCapture
import PeerlogCaptureTools
import PeerlogChannel
import PeerlogModel
import Testing

/// Two in-memory secure channels talk; their wire bytes are wrapped in Ethernet/IPv4/TCP
/// packets in a classic pcap file, as tcpdump would write them; decryption with the key log
/// must give back exactly the messages sent.
@Suite struct RawDecryptTests {
    struct Wire {
        var packets = [(time: UInt64, fromInitiator: Bool, payload: [UInt8])]()
        var seq: [Bool: UInt32] = [true: 1000, false: 9000]
        var clock: UInt64 = 1_700_000_000_000_000

        mutating func add(_ actions: [ChannelAction], fromInitiator: Bool, split: Int = 1400) {
            for case .write(let bytes) in actions {
                var i = 0
                while i < bytes.count {
                    clock += 10
                    packets.append((clock, fromInitiator, Array(bytes[i..<min(i + split, bytes.count)])))
                    i += split
                }
            }
        }

        func pcap(retransmitFirst: Bool = false, dropOne: Bool = false) -> [UInt8] {
            var out = [UInt8]()
            out.le32(0xA1B2_C3D4)
            out.le16(2)
            out.le16(4)
            out.le32(0)
            out.le32(0)
            out.le32(65535)
            out.le32(1)
            // Sequence numbers first, over every packet sent; then retransmit or lose one.
            var seq = self.seq
            var list = packets.map { p -> (time: UInt64, fromInitiator: Bool, payload: [UInt8], seq: UInt32) in
                defer { seq[p.fromInitiator]! &+= UInt32(p.payload.count) }
                return (p.time, p.fromInitiator, p.payload, seq[p.fromInitiator]!)
            }
            if retransmitFirst, let first = list.first { list.insert(first, at: 1) }
            if dropOne,
                let i = list.indices.first(where: { $0 > 3 && list[$0].fromInitiator && list[$0 + 1].fromInitiator })
            {
                list.remove(at: i)
            }
            for p in list {
                let frame = ethernetIPv4TCP(fromInitiator: p.fromInitiator, seq: p.seq, payload: p.payload)
                out.le32(UInt32(p.time / 1_000_000))
                out.le32(UInt32(p.time % 1_000_000))
                out.le32(UInt32(frame.count))
                out.le32(UInt32(frame.count))
                out += frame
            }
            return out
        }

        func ethernetIPv4TCP(fromInitiator: Bool, seq: UInt32, payload: [UInt8]) -> [UInt8] {
            var f = [UInt8](repeating: 0, count: 12) + [0x08, 0x00]
            let total = 20 + 20 + payload.count
            f += [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 0, 0x40, 0, 64, 6, 0, 0]
            f += fromInitiator ? [127, 0, 0, 1, 127, 0, 0, 2] : [127, 0, 0, 2, 127, 0, 0, 1]
            let (sp, dp): (UInt16, UInt16) = fromInitiator ? (40000, 7300) : (7300, 40000)
            f += [UInt8(sp >> 8), UInt8(sp & 0xff), UInt8(dp >> 8), UInt8(dp & 0xff)]
            f += [UInt8(seq >> 24), UInt8(seq >> 16 & 0xff), UInt8(seq >> 8 & 0xff), UInt8(seq & 0xff)]
            f += [0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]
            return f + payload
        }
    }

    func session(rekeyInterval: UInt64) throws -> (Wire, [[UInt8]], [[UInt8]], KeyLogEntry) {
        let config = ChannelConfiguration(rekeyInterval: rekeyInterval)
        var i = SecureChannel(
            role: .initiator, device: Fixtures.alice, configuration: config, authorize: { _ in .allow })
        var r = SecureChannel(role: .responder, device: Fixtures.bob, configuration: config, authorize: { _ in .allow })
        var wire = Wire()
        func deliver(_ actions: [ChannelAction], from initiator: Bool) -> [ChannelAction] {
            wire.add(actions, fromInitiator: initiator)
            var replies = [ChannelAction]()
            for case .write(let bytes) in actions {
                replies += initiator ? r.receive(bytes) : i.receive(bytes)
            }
            return replies
        }
        var pending = deliver(i.start(), from: true)
        var fromInitiator = false
        while pending.contains(where: { if case .write = $0 { true } else { false } }) {
            pending = deliver(pending, from: fromInitiator)
            fromInitiator.toggle()
        }
        #expect(i.isEstablished && r.isEstablished)
        var sentByI = [[UInt8]]()
        var sentByR = [[UInt8]]()
        for n in 0..<12 {
            // Sizes include a fragmented message (over 65,518 bytes).
            let m = [UInt8](repeating: UInt8(n), count: n == 5 ? 150_000 : 20 + n * 7)
            if n % 3 == 2 {
                _ = deliver(try r.send(m), from: false)
                sentByR.append(m)
            } else {
                _ = deliver(try i.send(m), from: true)
                sentByI.append(m)
            }
        }
        _ = deliver(i.close(reason: "done"), from: true)
        let entry = KeyLogEntry(
            keys: i.transportKeys!, initiator: Fixtures.alice.device, responder: Fixtures.bob.device)
        #expect(r.transportKeys == i.transportKeys)
        return (wire, sentByI, sentByR, entry)
    }

    @Test(arguments: [UInt64(4096), 3]) func decryptsWhatWasSent(rekeyInterval: UInt64) throws {
        let (wire, byI, byR, entry) = try session(rekeyInterval: rekeyInterval)
        let parsed = try KeyLogEntry.parse("# comment\nOTHER 1 2\n" + entry.line + "\n")
        #expect(parsed == [entry])
        for retransmit in [false, true] {
            let d = try RawDecrypt(
                file: PacketFile(bytes: wire.pcap(retransmitFirst: retransmit)), keyLog: parsed,
                rekeyInterval: rekeyInterval)
            #expect(d.connections.count == 1)
            #expect(d.connections[0].problem == nil, "\(d.connections[0].problem ?? "")")
            let messages = d.records.filter { $0.kind == .message }
            #expect(messages.filter { $0.direction == .outbound }.map(\.data) == byI)
            #expect(messages.filter { $0.direction == .inbound }.map(\.data) == byR)
            #expect(d.records.last?.kind == .closed)
            #expect(messages.allSatisfy { $0.local == Fixtures.alice.device && $0.peer == Fixtures.bob.device })
        }
        // The responder's view swaps local, peer and directions.
        let asResponder = try RawDecrypt(
            file: PacketFile(bytes: wire.pcap()), keyLog: parsed, side: .responder, rekeyInterval: rekeyInterval)
        #expect(asResponder.records.filter { $0.kind == .message && $0.direction == .outbound }.map(\.data) == byR)
    }

    @Test func wrongKeysGapsAndMissingEntriesAreReported() throws {
        let (wire, _, _, entry) = try session(rekeyInterval: 4096)
        // No entry for the connection: skipped, and said so.
        let none = try RawDecrypt(file: PacketFile(bytes: wire.pcap()), keyLog: [])
        #expect(none.records.isEmpty)
        #expect(none.connections.first?.problem?.contains("no key log entry") == true)
        // A wrong rekey interval: decryption stops with a reason.
        let wrong = try RawDecrypt(file: PacketFile(bytes: wire.pcap()), keyLog: [entry], rekeyInterval: 2)
        #expect(wrong.connections[0].problem?.contains("does not decrypt") == true)
        // A lost packet: a gap, named.
        do {
            _ = try RawDecrypt(file: PacketFile(bytes: wire.pcap(dropOne: true)), keyLog: [entry])
            Issue.record("accepted a gap")
        } catch let e as CaptureError {
            #expect(e.detail.contains("gap"), "\(e)")
        }
        #expect(throws: CaptureError.self) { try KeyLogEntry.parse("PEERLOG_NOISE_KEYS abc\n") }
    }
}

extension Array where Element == UInt8 {
    mutating func le16(_ v: UInt16) {
        append(UInt8(v & 0xff))
        append(UInt8(v >> 8))
    }
    mutating func le32(_ v: UInt32) {
        for s in stride(from: 0, to: 32, by: 8) { append(UInt8(truncatingIfNeeded: v >> UInt32(s))) }
    }
}
