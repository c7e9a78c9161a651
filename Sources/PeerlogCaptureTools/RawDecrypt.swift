import PeerlogCapture
import PeerlogChannel
import PeerlogModel
import PeerlogNoise

/// `peerlog capture decrypt`: a raw TCP capture (tcpdump, tshark) plus a key log becomes a
/// Peerlog capture. Each TCP connection whose first initiator frame (handshake message 1, the
/// initiator's clear-text ephemeral key) matches a key log entry is decrypted with the logged
/// transport keys, following §14: three handshake frames, then transport frames, rekeyed every
/// `rekeyInterval` frames per direction, records reassembled into messages.
package struct RawDecrypt {
    /// Whose view the records take (`--side`): the initiator's (the dialer) or the responder's. It decides each
    /// record's `local`, `peer` and direction.
    package enum Side: String, Sendable { case initiator, responder }

    /// One TCP connection that starts like a Peerlog handshake, decrypted or skipped.
    package struct Connection: Sendable {
        /// The `connection` of its records: its 1-based position in `connections`.
        package let id: UInt64
        /// The dialing endpoint (for a skipped connection: the one that sent the connection's first packet).
        package let initiator: Endpoint
        /// The accepting endpoint (for a skipped connection: the other one).
        package let responder: Endpoint
        /// Nil when no key log entry matched (the connection is skipped).
        package let entry: KeyLogEntry?
        /// Records decrypted from the connection (its messages, plus a `closed` per close record seen).
        package let messages: Int
        /// Why decryption stopped early, if it did.
        package let problem: String?
    }

    /// The records of every decrypted connection, sorted by time; there are no `opened` records (docs/TOOLS.md).
    package private(set) var records: [CaptureRecord] = []
    /// Every TCP connection with a 32-byte first frame (§14.2, §14.3) in either direction, in order of first
    /// packet; other TCP connections are left out.
    package private(set) var connections: [Connection] = []

    /// Decrypts each connection of `file` whose initiator ephemeral key is in `keyLog` (§17.5), calling REKEY
    /// after every `rekeyInterval`-th frame per direction (0: never; must match the peers, default 4096).
    /// A direction that fails part-way (a frame that does not decrypt, an unknown record type) stops there and
    /// `Connection.problem` says why; that is not thrown.
    /// - Throws: `CaptureError` when `TCPStreams` cannot rebuild the streams (unsupported link type, a gap);
    ///   `NoiseError` when a matched entry's key is not 32 bytes (`init(keys:…)` does not check).
    package init(file: PacketFile, keyLog: [KeyLogEntry], side: Side = .initiator, rekeyInterval: UInt64 = 4096) throws
    {
        let tcp = try TCPStreams(file: file)
        var byEphemeral = [[UInt8]: KeyLogEntry]()
        for e in keyLog { byEphemeral[e.keys.initiatorEphemeral] = e }
        var done = Set<TCPStreams.Flow>()
        for flow in tcp.order where !done.contains(flow) {
            done.insert(flow)
            done.insert(flow.reversed)
            guard let a = tcp.streams[flow] else { continue }
            let b = tcp.streams[flow.reversed]
            // The initiator's first frame is its 32-byte ephemeral key.
            let candidates = [a, b].compactMap { $0 }
            guard
                let (initiatorStream, entry) = candidates.lazy.compactMap({ s -> (TCPStreams.Stream, KeyLogEntry)? in
                    guard let e = Self.firstFrame(s.bytes), e.count == 32, let entry = byEphemeral[e] else {
                        return nil
                    }
                    return (s, entry)
                }).first
            else {
                if candidates.contains(where: { Self.firstFrame($0.bytes)?.count == 32 }) {
                    connections.append(
                        Connection(
                            id: UInt64(connections.count + 1), initiator: flow.source, responder: flow.destination,
                            entry: nil, messages: 0, problem: "no key log entry for this connection"))
                }
                continue
            }
            let responderStream = tcp.streams[initiatorStream.flow.reversed]
            let id = UInt64(connections.count + 1)
            var out = [CaptureRecord]()
            var problems = [String]()
            for (stream, fromInitiator) in [(initiatorStream, true), (responderStream, false)] {
                guard let stream else { continue }
                do {
                    try Self.decrypt(
                        stream, fromInitiator: fromInitiator, entry: entry, side: side, connection: id,
                        rekeyInterval: rekeyInterval, into: &out)
                } catch let e as CaptureError { problems.append(e.detail) }
            }
            out.sort { $0.time < $1.time }
            records += out
            connections.append(
                Connection(
                    id: id, initiator: initiatorStream.flow.source, responder: initiatorStream.flow.destination,
                    entry: entry, messages: out.count,
                    problem: problems.isEmpty ? nil : problems.joined(separator: "; ")))
        }
        records.sort { $0.time < $1.time }
    }

    static func firstFrame(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= 2 else { return nil }
        let n = Int(bytes[0]) << 8 | Int(bytes[1])
        guard n > 0, bytes.count >= 2 + n else { return nil }
        return Array(bytes[2..<(2 + n)])
    }

    static func decrypt(
        _ stream: TCPStreams.Stream, fromInitiator: Bool, entry: KeyLogEntry, side: Side, connection: UInt64,
        rekeyInterval: UInt64, into out: inout [CaptureRecord]
    ) throws {
        let key = fromInitiator ? entry.keys.initiatorToResponder : entry.keys.responderToInitiator
        var cipher = try NoiseCipherState(key: key)
        let local = side == .initiator ? entry.initiator : entry.responder
        let peer = side == .initiator ? entry.responder : entry.initiator
        let outbound = fromInitiator == (side == .initiator)
        let bytes = stream.bytes
        var offset = 0
        var frameIndex = 0
        var framesDecrypted: UInt64 = 0
        var reassembly = [UInt8]()
        // Handshake frames: the initiator sends messages 1 and 3, the responder message 2.
        let handshakeFrames = fromInitiator ? 2 : 1
        while offset + 2 <= bytes.count {
            let n = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            guard n > 0 else {
                throw CaptureError(
                    .notDecryptable, offset: nil, "\(stream.flow.source): zero-length frame at stream offset \(offset)")
            }
            guard offset + 2 + n <= bytes.count else { break }  // cut off at the end of the capture
            let body = Array(bytes[(offset + 2)..<(offset + 2 + n)])
            let time = stream.time(ofByte: offset + 1 + n)
            offset += 2 + n
            frameIndex += 1
            if frameIndex <= handshakeFrames { continue }
            let record: [UInt8]
            do { record = try cipher.decrypt(body) } catch {
                throw CaptureError(
                    .notDecryptable, offset: nil,
                    "\(stream.flow.source): transport frame \(framesDecrypted + 1) does not decrypt with the logged key (wrong key log entry or rekey interval?)"
                )
            }
            framesDecrypted += 1
            if rekeyInterval > 0, framesDecrypted % rekeyInterval == 0 { cipher.rekey() }
            guard let type = record.first.flatMap(ChannelWire.RecordType.init(rawValue:)) else {
                throw CaptureError(
                    .notDecryptable, offset: nil,
                    "\(stream.flow.source): unknown record type in transport frame \(framesDecrypted)")
            }
            let data = Array(record.dropFirst())
            func emit(_ kind: CaptureRecord.Kind, _ data: [UInt8]) {
                out.append(
                    CaptureRecord(
                        time: time, kind: kind, direction: outbound ? .outbound : .inbound, connection: connection,
                        local: local, peer: peer, data: data))
            }
            switch type {
            case .message: emit(.message, data)
            case .fragment: reassembly += data
            case .lastFragment:
                emit(.message, reassembly + data)
                reassembly = []
            case .close:
                emit(.closed, Array("closed by \(fromInitiator ? "initiator" : "responder"): ".utf8) + data)
                return
            }
        }
    }
}
