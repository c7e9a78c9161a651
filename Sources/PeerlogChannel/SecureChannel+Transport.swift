import PeerlogNoise

extension SecureChannel {
    /// Bytes on the wire for one application message of `count` bytes: its frames, each with
    /// header, record type and tag.
    public static func wireLength(ofMessage count: Int) -> Int {
        let frames = max(1, (count + ChannelWire.maxRecordData - 1) / ChannelWire.maxRecordData)
        return count + frames * (ChannelWire.headerLength + 1 + ChannelWire.tagLength)
    }

    /// Encrypts one application message as one record, or as fragments when longer than a frame holds.
    public mutating func send(_ message: [UInt8]) throws -> [ChannelAction] {
        try checkSendable(message.count)
        var actions: [ChannelAction] = []
        let out = [UInt8](unsafeUninitializedCapacity: Self.wireLength(ofMessage: message.count)) { buffer, count in
            message.withUnsafeBytes { (count, actions) = sealMessage($0, into: UnsafeMutableRawBufferPointer(buffer)) }
        }
        return actions.isEmpty ? [.write(out)] : actions
    }

    /// The bulk path: seals one application message into `out`, which holds at least
    /// `wireLength(ofMessage:)` bytes (a reused buffer, a NIO ByteBuffer's writable bytes), so
    /// no frame is allocated or copied. Returns the bytes written, and the close if
    /// encryption failed (then nothing was written).
    public mutating func send(
        _ message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) throws -> (written: Int, actions: [ChannelAction]) {
        try checkSendable(message.count)
        precondition(
            out.count >= Self.wireLength(ofMessage: message.count),
            "the output buffer is shorter than wireLength(ofMessage:)")
        return sealMessage(message, into: out)
    }

    private func checkSendable(_ count: Int) throws {
        guard state != .closed else { throw ChannelError(.closed) }
        guard state == .established else { throw ChannelError(.notEstablished) }
        guard count > 0 else { throw ChannelError(.emptyMessage) }
        guard count <= configuration.maxMessageBytes else {
            throw ChannelError.messageTooLarge(size: count, limit: configuration.maxMessageBytes)
        }
    }

    private mutating func sealMessage(
        _ message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) -> (Int, [ChannelAction]) {
        var written = 0
        do {
            if message.count <= ChannelWire.maxRecordData {
                written = try sealFrame(.message, message, into: out.baseAddress!)
            } else {
                var start = 0
                while start < message.count {
                    let end = min(start + ChannelWire.maxRecordData, message.count)
                    let type: ChannelWire.RecordType = end == message.count ? .lastFragment : .fragment
                    written += try sealFrame(
                        type, UnsafeRawBufferPointer(rebasing: message[start..<end]), into: out.baseAddress! + written)
                    start = end
                }
            }
        } catch {
            return (0, fail(.protocolError("encrypt failed: \(error)"), sendRecord: false))
        }
        statistics.messagesOut += 1
        return (written, [])
    }

    /// One frame as its own array (close records).
    mutating func sealedFrame(_ type: ChannelWire.RecordType, _ data: [UInt8]) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: ChannelWire.headerLength + 1 + data.count + ChannelWire.tagLength) {
            buffer, count in
            count = try data.withUnsafeBytes {
                try sealFrame(type, $0, into: UnsafeMutableRawPointer(buffer.baseAddress!))
            }
        }
    }

    /// One whole frame at `out`, length ‖ encrypted(type ‖ data) ‖ tag, encrypted where it
    /// lies; returns its length.
    mutating func sealFrame(
        _ type: ChannelWire.RecordType, _ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer
    ) throws -> Int {
        guard var cipher = sendCipher else { throw ChannelError(.notEstablished) }
        let bodyLength = 1 + data.count + ChannelWire.tagLength
        out.storeBytes(of: UInt8(bodyLength >> 8), as: UInt8.self)
        out.storeBytes(of: UInt8(bodyLength & 0xff), toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: type.rawValue, toByteOffset: 2, as: UInt8.self)
        if let source = data.baseAddress { (out + 3).copyMemory(from: source, byteCount: data.count) }
        try cipher.encrypt(inPlace: out + ChannelWire.headerLength, count: 1 + data.count)
        transportFramesOut += 1
        if configuration.rekeyInterval > 0, transportFramesOut % configuration.rekeyInterval == 0 {
            cipher.rekey()
            statistics.rekeysOut += 1
        }
        sendCipher = cipher
        statistics.framesOut += 1
        statistics.bytesOut += UInt64(ChannelWire.headerLength + bodyLength)
        return ChannelWire.headerLength + bodyLength
    }

    /// Decrypts one transport frame out of `frameBody` into `plaintext` (no per-frame buffer).
    mutating func receiveTransport(_ frameBody: UnsafeRawBufferPointer) -> [ChannelAction] {
        guard frameBody.count > ChannelWire.tagLength else {
            return fail(.protocolError("transport frame of \(frameBody.count) bytes is shorter than 17"))
        }
        guard var cipher = receiveCipher else { return fail(.protocolError("no transport keys")) }
        let count = frameBody.count - ChannelWire.tagLength
        if plaintext.count < count { plaintext = [UInt8](repeating: 0, count: count) }
        do { try plaintext.withUnsafeMutableBytes { try cipher.decrypt(frameBody, into: $0.baseAddress!) } } catch {
            return fail(.protocolError("decrypt failed"))
        }
        transportFramesIn += 1
        if configuration.rekeyInterval > 0, transportFramesIn % configuration.rekeyInterval == 0 {
            cipher.rekey()
            statistics.rekeysIn += 1
        }
        receiveCipher = cipher
        let type = plaintext[0]
        let data = plaintext[1..<count]
        switch ChannelWire.RecordType(rawValue: type) {
        case .message:
            guard reassembly.isEmpty else { return fail(.protocolError("whole message inside a fragmented message")) }
            guard !data.isEmpty else { return fail(.protocolError("empty application message")) }
            statistics.messagesIn += 1
            return [.deliver(Array(data))]
        case .fragment, .lastFragment:
            guard !data.isEmpty else { return fail(.protocolError("empty fragment")) }
            let last = type == ChannelWire.RecordType.lastFragment.rawValue
            guard !(last && reassembly.isEmpty) else {
                return fail(.protocolError("last fragment without a first fragment"))
            }
            guard reassembly.count + data.count <= configuration.maxMessageBytes else {
                return fail(.protocolError("message exceeds \(configuration.maxMessageBytes) bytes"))
            }
            if let limit = reserveReassembly(for: reassembly.count + data.count) {
                return fail(
                    .resourceLimit(
                        "partial messages of identity \(peerCertificate?.identity.description ?? "?") exceed \(limit)"))
            }
            reassembly += data
            guard last else { return [] }
            let message = reassembly
            reassembly = []
            lastReassembledBytes = message.count
            reassemblyReservation?.releaseAll()
            statistics.messagesIn += 1
            return [.deliver(message)]
        case .close:
            closeBuffers()
            return [.closed(.remote(String(decoding: data, as: UTF8.self)))]
        case nil:
            return fail(.protocolError("unknown record type 0x" + String(type, radix: 16)))
        }
    }

    /// Grows the reassembly buffer's capacity itself (doubling, at most `maxMessageBytes`)
    /// so that what is reserved is what is allocated; names the budget limit it would exceed.
    /// A message's first fragment asks at once for the size of the connection's last fragmented
    /// message when the budget allows it: a catch-up's batches and a blob's 1 MiB chunks come
    /// alike, and growing by doubling cost each of them four allocations more and a copy of all
    /// but the last fragment.
    private mutating func reserveReassembly(for needed: Int) -> ReassemblyLimit? {
        guard needed > reassembly.capacity else { return nil }
        let capacity = min(max(needed, reassembly.capacity * 2), configuration.maxMessageBytes)
        let hinted = min(lastReassembledBytes, configuration.maxMessageBytes)
        if hinted > capacity, reassemblyReservation?.hold(hinted) == nil {
            reassembly.reserveCapacity(hinted)
            return nil
        }
        if let reservation = reassemblyReservation, let limit = reservation.hold(capacity) { return limit }
        reassembly.reserveCapacity(capacity)
        return nil
    }
}
