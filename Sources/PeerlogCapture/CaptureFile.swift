import Foundation

/// The Peerlog records of a capture file, in file order.
public struct CaptureFile {
    public let records: [CaptureRecord]
    /// Packets of other link types (e.g. a raw TCP capture), which hold no Peerlog records.
    public let otherPackets: Int

    public init(bytes: [UInt8]) throws {
        let file = try PacketFile(bytes: bytes)
        var records = [CaptureRecord]()
        var other = 0
        for p in file.packets {
            guard p.linkType == CaptureRecord.linkType else { other += 1; continue }
            records.append(try CaptureRecord(packet: p.data, time: p.time, offset: p.offset))
        }
        if records.isEmpty, other > 0 {
            throw CaptureError(offset: nil, "no Peerlog records: the \(other) packets have link type \(Set(file.packets.map(\.linkType)).sorted().map(String.init).joined(separator: ", ")), not \(CaptureRecord.linkType) (a raw capture? decrypt it with `peerlog capture decrypt`)")
        }
        self.records = records
        otherPackets = other
    }

    public init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw CaptureError(.unreadableFile, offset: nil, "cannot read \(path)") }
        do { try self.init(bytes: Array(data)) } catch var e as CaptureError {
            e.path = path
            throw e
        }
    }

    /// Connection ids in order of first appearance.
    public var connections: [UInt64] {
        var seen = Set<UInt64>()
        return records.compactMap { seen.insert($0.connection).inserted ? $0.connection : nil }
    }
}
