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
        var records: [[UInt8]] = []
        do {
            if message.count <= ChannelWire.maxRecordData {
                records.append(try sealRecord(.message, message[...]))
            } else {
                var start = 0
                while start < message.count {
                    let end = min(start + ChannelWire.maxRecordData, message.count)
                    records.append(try sealRecord(end == message.count ? .lastFragment : .fragment, message[start..<end]))
                    start = end
                }
            }
        } catch {
            return fail(.protocolError("encrypt failed: \(error)"), sendRecord: false)
        }
        statistics.messagesOut += 1
        return [.write(frames(records))]
    }

    /// Encrypts type ‖ data with the send cipher, rekeying after every `rekeyInterval` frames.
    mutating func sealRecord(_ type: ChannelWire.RecordType, _ data: some Collection<UInt8>) throws -> [UInt8] {
        guard var cipher = sendCipher else { throw ChannelError.notEstablished }
        let sealed = try cipher.encrypt([type.rawValue] + data)
        transportFramesOut += 1
        if configuration.rekeyInterval > 0, transportFramesOut % configuration.rekeyInterval == 0 {
            cipher.rekey()
            statistics.rekeysOut += 1
        }
        sendCipher = cipher
        return sealed
    }

    mutating func receiveTransport(_ body: [UInt8]) -> [ChannelAction] {
        guard body.count > ChannelWire.tagLength else {
            return fail(.protocolError("transport frame of \(body.count) bytes is shorter than 17"))
        }
        guard var cipher = receiveCipher else { return fail(.protocolError("no transport keys")) }
        let plaintext: [UInt8]
        do { plaintext = try cipher.decrypt(body) } catch {
            return fail(.protocolError("decrypt failed"))
        }
        transportFramesIn += 1
        if configuration.rekeyInterval > 0, transportFramesIn % configuration.rekeyInterval == 0 {
            cipher.rekey()
            statistics.rekeysIn += 1
        }
        receiveCipher = cipher
        let data = plaintext[1...]
        switch ChannelWire.RecordType(rawValue: plaintext[0]) {
        case .message:
            guard reassembly.isEmpty else { return fail(.protocolError("whole message inside a fragmented message")) }
            guard !data.isEmpty else { return fail(.protocolError("empty application message")) }
            statistics.messagesIn += 1
            return [.deliver(Array(data))]
        case .fragment, .lastFragment:
            guard !data.isEmpty else { return fail(.protocolError("empty fragment")) }
            let last = plaintext[0] == ChannelWire.RecordType.lastFragment.rawValue
            guard !(last && reassembly.isEmpty) else { return fail(.protocolError("last fragment without a first fragment")) }
            guard reassembly.count + data.count <= configuration.maxMessageBytes else {
                return fail(.protocolError("message exceeds \(configuration.maxMessageBytes) bytes"))
            }
            reassembly += data
            guard last else { return [] }
            let message = reassembly
            reassembly = []
            statistics.messagesIn += 1
            return [.deliver(message)]
        case .close:
            state = .closed
            reader = FrameReader()
            reassembly = []
            return [.closed(.remote(String(decoding: data, as: UTF8.self)))]
        case nil:
            return fail(.protocolError("unknown record type 0x" + String(plaintext[0], radix: 16)))
        }
    }
}
