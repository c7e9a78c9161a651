import PeerlogNoise

extension SecureChannel {
    /// Encrypts one application message as one record, or as fragments when longer than a frame holds.
    public mutating func send(_ message: [UInt8]) throws -> [ChannelAction] {
        guard state != .closed else { throw ChannelError.closed }
        guard state == .established else { throw ChannelError.notEstablished }
        guard !message.isEmpty else { throw ChannelError.emptyMessage }
        guard message.count <= configuration.maxMessageBytes else {
            throw ChannelError.messageTooLarge(size: message.count, limit: configuration.maxMessageBytes)
        }
        var out: [UInt8] = []
        do {
            if message.count <= ChannelWire.maxRecordData {
                out = try sealFrame(.message, message[...])
            } else {
                out.reserveCapacity(message.count + (message.count / ChannelWire.maxRecordData + 1) * (ChannelWire.headerLength + 1 + ChannelWire.tagLength))
                var start = 0
                while start < message.count {
                    let end = min(start + ChannelWire.maxRecordData, message.count)
                    out += try sealFrame(end == message.count ? .lastFragment : .fragment, message[start..<end])
                    start = end
                }
            }
        } catch {
            return fail(.protocolError("encrypt failed: \(error)"), sendRecord: false)
        }
        statistics.messagesOut += 1
        return [.write(out)]
    }

    /// One whole frame, length ‖ encrypted(type ‖ data) ‖ tag, built and encrypted in one
    /// buffer (no intermediate copies on the bulk path).
    mutating func sealFrame(_ type: ChannelWire.RecordType, _ data: ArraySlice<UInt8>) throws -> [UInt8] {
        guard var cipher = sendCipher else { throw ChannelError.notEstablished }
        let bodyLength = 1 + data.count + ChannelWire.tagLength
        var frame = [UInt8]()
        frame.reserveCapacity(ChannelWire.headerLength + bodyLength)
        frame.append(UInt8(bodyLength >> 8))
        frame.append(UInt8(bodyLength & 0xff))
        frame.append(type.rawValue)
        frame += data
        frame.append(contentsOf: repeatElement(0, count: ChannelWire.tagLength))
        try cipher.encrypt(inPlace: &frame, range: ChannelWire.headerLength..<(ChannelWire.headerLength + 1 + data.count))
        transportFramesOut += 1
        if configuration.rekeyInterval > 0, transportFramesOut % configuration.rekeyInterval == 0 {
            cipher.rekey()
            statistics.rekeysOut += 1
        }
        sendCipher = cipher
        statistics.framesOut += 1
        statistics.bytesOut += UInt64(frame.count)
        return frame
    }

    mutating func receiveTransport(_ frameBody: [UInt8]) -> [ChannelAction] {
        guard frameBody.count > ChannelWire.tagLength else {
            return fail(.protocolError("transport frame of \(frameBody.count) bytes is shorter than 17"))
        }
        guard var cipher = receiveCipher else { return fail(.protocolError("no transport keys")) }
        var body = frameBody
        do { try cipher.decrypt(inPlace: &body, range: 0..<body.count) } catch {
            return fail(.protocolError("decrypt failed"))
        }
        let plaintext = body[..<(body.count - ChannelWire.tagLength)]
        transportFramesIn += 1
        if configuration.rekeyInterval > 0, transportFramesIn % configuration.rekeyInterval == 0 {
            cipher.rekey()
            statistics.rekeysIn += 1
        }
        receiveCipher = cipher
        let data = plaintext[1...]
        switch ChannelWire.RecordType(rawValue: plaintext[plaintext.startIndex]) {
        case .message:
            guard reassembly.isEmpty else { return fail(.protocolError("whole message inside a fragmented message")) }
            guard !data.isEmpty else { return fail(.protocolError("empty application message")) }
            statistics.messagesIn += 1
            return [.deliver(Array(data))]
        case .fragment, .lastFragment:
            guard !data.isEmpty else { return fail(.protocolError("empty fragment")) }
            let last = plaintext[plaintext.startIndex] == ChannelWire.RecordType.lastFragment.rawValue
            guard !(last && reassembly.isEmpty) else { return fail(.protocolError("last fragment without a first fragment")) }
            guard reassembly.count + data.count <= configuration.maxMessageBytes else {
                return fail(.protocolError("message exceeds \(configuration.maxMessageBytes) bytes"))
            }
            if let limit = reserveReassembly(for: reassembly.count + data.count) {
                return fail(.resourceLimit("partial messages of identity \(peerCertificate?.identity.description ?? "?") exceed \(limit)"))
            }
            reassembly += data
            guard last else { return [] }
            let message = reassembly
            reassembly = []
            reassemblyReservation?.releaseAll()
            statistics.messagesIn += 1
            return [.deliver(message)]
        case .close:
            closeBuffers()
            return [.closed(.remote(String(decoding: data, as: UTF8.self)))]
        case nil:
            return fail(.protocolError("unknown record type 0x" + String(plaintext[plaintext.startIndex], radix: 16)))
        }
    }

    /// Grows the reassembly buffer's capacity itself (doubling, at most `maxMessageBytes`)
    /// so that what is reserved is what is allocated; names the budget limit it would exceed.
    private mutating func reserveReassembly(for needed: Int) -> ReassemblyLimit? {
        guard needed > reassembly.capacity else { return nil }
        let capacity = min(max(needed, reassembly.capacity * 2), configuration.maxMessageBytes)
        if let reservation = reassemblyReservation, let limit = reservation.hold(capacity) { return limit }
        reassembly.reserveCapacity(capacity)
        return nil
    }
}
