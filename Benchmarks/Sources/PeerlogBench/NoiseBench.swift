import Foundation
import PeerlogChannel
import PeerlogCrypto
import PeerlogModel

// Noise bulk throughput between two processes on loopback (this one sends, a child
// `peerlog-bench noise-sink` receives and decrypts), as a ratio to raw ChaCha20-Poly1305
// sealing of the same message size measured in this run.

let noiseBenchMessage = ChannelWire.maxRecordData  // one application message = one full frame
/// Messages sealed into one buffer and sent with one `send(2)`, as the daemon's NIO layer
/// coalesces the frames it writes before one flush into one `writev(2)`.
let noiseBenchBatch = 4
/// The sink's read buffer, allocated once: a whole batch per `recv(2)` when the kernel has it.
let noiseBenchReadBytes = 256 << 10

func benchDevices() throws -> (LocalDevice, LocalDevice) {
    (
        try LocalDevice.deterministic(seed: [1], name: "sender", createdAt: 1),
        try LocalDevice.deterministic(seed: [2], name: "sink", createdAt: 1)
    )
}

/// Pumps channel actions to the socket; returns delivered messages.
@discardableResult
func pump(_ actions: [ChannelAction], _ socket: BlockingSocket) throws -> [[UInt8]] {
    var delivered: [[UInt8]] = []
    if actions.count == 1, case .write(let only) = actions[0] {  // the bulk path: no concatenation
        try socket.write(only)
        return delivered
    }
    var out: [UInt8] = []
    for a in actions {
        switch a {
        case .write(let b): out += b
        case .deliver(let m): delivered.append(m)
        case .closed(let why):
            if !out.isEmpty { try socket.write(out) }
            if case .remote = why { return delivered }
            if case .local = why { return delivered }
            throw BenchError("channel closed: \(why)")
        case .established: break
        }
    }
    if !out.isEmpty { try socket.write(out) }
    return delivered
}

/// The child: accepts one connection, receives `total` bytes of messages, answers one byte.
func noiseSink(total: Int) throws {
    let (listener, port) = try BlockingSocket.listen()
    FileHandle.standardOutput.write(Data("port \(port)\n".utf8))
    let socket = try listener.accept()
    let (_, sink) = try benchDevices()
    var channel = SecureChannel(role: .responder, device: sink, authorize: { _ in .allow })
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: noiseBenchReadBytes, alignment: 16)
    defer { buffer.deallocate() }
    var received = 0
    while received < total {
        let n = try socket.read(into: buffer)
        guard n > 0 else { throw BenchError("sender went away after \(received) bytes") }
        for m in try pump(channel.receive(UnsafeRawBufferPointer(rebasing: buffer[..<n])), socket) {
            received += m.count
        }
    }
    try pump(try channel.send([1]), socket)
    _ = try socket.read()  // until the sender closes
    socket.close()
}

/// The child for the plain-TCP reference: reads `total` bytes, answers one byte.
func tcpSink(total: Int) throws {
    let (listener, port) = try BlockingSocket.listen()
    FileHandle.standardOutput.write(Data("port \(port)\n".utf8))
    let socket = try listener.accept()
    var received = 0
    while received < total {
        let bytes = try socket.read()
        guard !bytes.isEmpty else { throw BenchError("sender went away after \(received) bytes") }
        received += bytes.count
    }
    try socket.write([1])
    _ = try socket.read()
    socket.close()
}

/// Starts `peerlog-bench MODE total` and returns the port its listener announced.
func startSink(_ mode: String, total: Int) throws -> (Process, Int) {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = [mode, String(total)]
    let pipe = Pipe()
    child.standardOutput = pipe
    try child.run()
    let line = String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
    guard let port = Int(line.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") else {
        throw BenchError("sink said \(line)")
    }
    return (child, port)
}

/// Where the time goes without sockets: sealing frames, then opening them, on one core.
/// `messageBytes` over one frame's data are sent as fragments and reassembled (a catch-up's
/// batches, a blob's 1 MiB chunks).
func channelInMemory(megabytes: Int, messageBytes: Int = noiseBenchMessage) throws -> (send: Double, receive: Double) {
    let (a, b) = try benchDevices()
    var initiator = SecureChannel(role: .initiator, device: a, authorize: { _ in .allow })
    var responder = SecureChannel(role: .responder, device: b, authorize: { _ in .allow })
    func writes(_ actions: [ChannelAction]) -> [UInt8] {
        var out: [UInt8] = []
        for case .write(let w) in actions { out += w }
        return out
    }
    var toResponder = writes(initiator.start())
    while !toResponder.isEmpty { toResponder = writes(initiator.receive(writes(responder.receive(toResponder)))) }
    let payload = [UInt8](repeating: 0x5a, count: messageBytes)
    let messages = (megabytes << 20) / messageBytes
    let frameBytes = SecureChannel.wireLength(ofMessage: messageBytes)
    // One wire buffer, touched before timing: what is measured is sealing, not page faults.
    var wire = [UInt8](repeating: 0, count: messages * frameBytes)
    let sendSeconds = try timed {
        try payload.withUnsafeBytes { message in
            try wire.withUnsafeMutableBytes { out in
                for i in 0..<messages {
                    _ = try initiator.send(
                        message, into: UnsafeMutableRawBufferPointer(rebasing: out[(i * frameBytes)...]))
                }
            }
        }
    }
    var delivered = 0
    let receiveSeconds = timed {
        wire.withUnsafeBytes { bytes in
            var start = 0
            while start < bytes.count {  // in read-sized chunks, as from a socket
                let end = min(start + noiseBenchReadBytes, bytes.count)
                for case .deliver(let m) in responder.receive(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) {
                    delivered += m.count
                }
                start = end
            }
        }
    }
    precondition(delivered == messages * messageBytes)
    return (Double(delivered) / sendSeconds, Double(delivered) / receiveSeconds)
}

/// Prints the Noise figures and returns the channel's bulk rate between 2 processes (bytes/s).
@discardableResult
func noiseBench(megabytes: Int) throws -> Double { try noiseBulk(megabytes: megabytes).rate }

/// The channel's bulk rate between 2 processes and the CPU both spent on it.
struct NoiseBulk {
    /// Bytes per second.
    let rate: Double
    /// CPU seconds (user + system) of both processes per GiB moved.
    let cpuPerGiB: Double
}

/// Prints the Noise figures; returns the bulk rate between 2 processes and its CPU cost.
func noiseBulk(megabytes: Int) throws -> NoiseBulk {
    let total = megabytes << 20
    let messages = (total + noiseBenchMessage - 1) / noiseBenchMessage
    let payload = [UInt8](repeating: 0x5a, count: noiseBenchMessage)

    // Raw AEAD over the same sizes, same process, same run.
    let key = SecureBytes(SecureRandom.bytes(32))
    var nonce = [UInt8](repeating: 0, count: 12)
    let rawSeconds = try timed {
        for i in 0..<messages {
            nonce[4] = UInt8(truncatingIfNeeded: i)
            _ = try ChaChaPoly.seal(payload, key: key, nonce: nonce)
        }
    }
    let rawRate = Double(messages * noiseBenchMessage) / rawSeconds

    // Plain TCP between the same two processes: the ceiling the channel runs under.
    let (tcpChild, tcpPort) = try startSink("tcp-sink", total: messages * (noiseBenchMessage + 19))
    let plain = try BlockingSocket.connect(port: tcpPort)
    let frame = [UInt8](repeating: 0x5a, count: noiseBenchMessage + 19)
    let tcpSeconds = try timed {
        for _ in 0..<messages { try plain.write(frame) }
        _ = try plain.read()
    }
    plain.close()
    tcpChild.waitUntilExit()
    let tcpRate = Double(messages * noiseBenchMessage) / tcpSeconds

    let childCPUBefore = cpuSeconds(RUSAGE_CHILDREN)
    let (child, port) = try startSink("noise-sink", total: messages * noiseBenchMessage)
    let socket = try BlockingSocket.connect(port: port)
    let (sender, _) = try benchDevices()
    var channel = SecureChannel(role: .initiator, device: sender, authorize: { _ in .allow })
    try pump(channel.start(), socket)
    while !channel.isEstablished { try pump(channel.receive(try socket.read()), socket) }
    let frameBytes = SecureChannel.wireLength(ofMessage: noiseBenchMessage)
    let selfCPUBefore = cpuSeconds()
    let batch = UnsafeMutableRawBufferPointer.allocate(byteCount: noiseBenchBatch * frameBytes, alignment: 16)
    defer { batch.deallocate() }
    let noiseSeconds = try timed {
        try payload.withUnsafeBytes { message in
            var sent = 0
            while sent < messages {
                var used = 0
                for _ in 0..<min(noiseBenchBatch, messages - sent) {
                    let sealed = try channel.send(
                        message, into: UnsafeMutableRawBufferPointer(rebasing: batch[used...]))
                    guard sealed.actions.isEmpty else { throw BenchError("send failed: \(sealed.actions)") }
                    used += sealed.written
                    sent += 1
                }
                try socket.write(UnsafeRawBufferPointer(rebasing: batch[..<used]))
            }
        }
        var acked = false
        while !acked {
            let bytes = try socket.read()
            guard !bytes.isEmpty else { throw BenchError("sink closed early") }
            acked = try !pump(channel.receive(bytes), socket).isEmpty
        }
    }
    let selfCPU = cpuSeconds() - selfCPUBefore
    try pump(channel.close(reason: "done"), socket)
    socket.close()
    child.waitUntilExit()
    let noiseRate = Double(messages * noiseBenchMessage) / noiseSeconds
    // The sink's whole life (its start-up included: a few ms) and the sender's sending.
    let cpuPerGiB =
        (selfCPU + cpuSeconds(RUSAGE_CHILDREN) - childCPUBefore)
        / (Double(messages * noiseBenchMessage) / Double(1 << 30))
    figure("ChaCha20-Poly1305 seal, \(noiseBenchMessage) B", String(format: "%.2f GB/s", rawRate / 1e9))
    let memory = try channelInMemory(megabytes: 32)
    figure("channel send in memory (seal + frame into one buffer)", String(format: "%.2f GB/s", memory.send / 1e9))
    figure("channel receive in memory (parse + open, 256 KiB reads)", String(format: "%.2f GB/s", memory.receive / 1e9))
    figure("plain TCP, 2 processes, \(megabytes) MiB", String(format: "%.2f GB/s", tcpRate / 1e9))
    figure("Noise channel, 2 processes, \(megabytes) MiB", String(format: "%.2f GB/s", noiseRate / 1e9))
    figure("  rekeys each way", String(channel.statistics.rekeysOut))
    ratio("Noise bulk / raw ChaCha20-Poly1305", noiseRate / rawRate, target: 0.7)
    ratio("Noise bulk / plain TCP", noiseRate / tcpRate)
    figure("  CPU per GiB, both processes", String(format: "%.2f s", cpuPerGiB))
    return NoiseBulk(rate: noiseRate, cpuPerGiB: cpuPerGiB)
}
