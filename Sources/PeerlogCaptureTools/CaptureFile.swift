import Foundation
import PeerlogCapture

/// The Peerlog records of a capture file, in file order.
package struct CaptureFile {
    /// The records of link type 147 (§17.1), in file order.
    package let records: [CaptureRecord]
    /// Packets of other link types (e.g. a raw TCP capture), which hold no Peerlog records.
    package let otherPackets: Int

    /// Reads the records of a capture file's bytes (pcapng, or classic pcap: §17.1).
    /// - Throws: `CaptureError` naming the byte offset when the file or a record is malformed (§17.1, §17.2),
    ///   or when it has packets but none of link type 147 (a raw capture: decrypt it first).
    package init(bytes: [UInt8]) throws {
        let file = try PacketFile(bytes: bytes)
        var records = [CaptureRecord]()
        var other = 0
        for p in file.packets {
            guard p.linkType == CaptureRecord.linkType else {
                other += 1
                continue
            }
            records.append(try CaptureRecord(packet: p.data, time: p.time, offset: p.offset))
        }
        if records.isEmpty, other > 0 {
            throw CaptureError(
                offset: nil,
                "no Peerlog records: the \(other) packets have link type \(Set(file.packets.map(\.linkType)).sorted().map(String.init).joined(separator: ", ")), not \(CaptureRecord.linkType) (a raw capture? decrypt it with `peerlog capture decrypt`)"
            )
        }
        self.records = records
        otherPackets = other
    }

    /// Reads the capture file at `path`, as `init(bytes:)` does.
    /// - Throws: `CaptureError` when the file cannot be read, or `init(bytes:)`'s error with `file` set to `path`.
    package init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CaptureError(.unreadableFile, offset: nil, "cannot read \(path)")
        }
        do { try self.init(bytes: Array(data)) } catch var e as CaptureError {
            e.path = path
            throw e
        }
    }

    /// Connection ids in order of first appearance.
    package var connections: [UInt64] {
        var seen = Set<UInt64>()
        return records.compactMap { seen.insert($0.connection).inserted ? $0.connection : nil }
    }
}
