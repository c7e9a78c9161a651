import Logging
import NIOCore
import PeerlogCapture
import PeerlogChannel
import PeerlogModel

/// The thin NIO layer around one `SecureChannel`: bytes in, actions out. Runs on its
/// channel's event loop; decrypted messages go to the hub, and everything decrypted in or
/// out passes `tapped(_:_:)`, the one point capture tools hook into.
final class PeerHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Decrypted bytes handed to the hub and not yet processed; above this the socket is not
    /// read, so a peer sending faster than the replica ingests fills its own TCP window, not
    /// our memory.
    static let maxPendingBytes = 8 << 20
    private var pendingBytes = 0
    private var readHeld = false
    /// A flush is queued behind the sends already waiting on the event loop.
    private var flushPending = false

    private var channel: SecureChannel
    private let hub: NodeHub
    private let id: UInt64
    private let outbound: Bool
    private let tap: Tap?
    private let logger: Logger
    private let onEstablished: @Sendable (DeviceCertificate) -> Void
    private let onClosed: @Sendable (ChannelCloseReason) -> Void
    private var context: ChannelHandlerContext?
    private var remote = "?"
    private var timeout: Scheduled<Void>?
    private var finished = false
    /// A pairing guest's connection (`handOver()`).
    private var handedOver = false
    private let handshakeTimeout: Duration
    private let admission: ConnectionAdmission
    /// The identity this connection counts against once established (`maxConnectionsPerIdentity`).
    private var countedIdentity: IdentityID?
    /// The handshake finished (a close before that is a handshake failure in the metrics).
    private var handshakeDone = false

    init(
        id: UInt64, outbound: Bool, hub: NodeHub, configuration: ChannelConfiguration, admission: ConnectionAdmission,
        tap: Tap?, logger: Logger, onEstablished: @escaping @Sendable (DeviceCertificate) -> Void = { _ in },
        onClosed: @escaping @Sendable (ChannelCloseReason) -> Void = { _ in }
    ) {
        self.id = id
        self.outbound = outbound
        self.hub = hub
        self.tap = tap
        self.logger = logger
        self.onEstablished = onEstablished
        self.onClosed = onClosed
        self.admission = admission
        handshakeTimeout = configuration.handshakeTimeout
        let hub = hub
        channel = SecureChannel(
            role: outbound ? .initiator : .responder, device: hub.device, configuration: configuration,
            authorize: { hub.authorize($0) },
            reassemblyBudget: admission.reassembly)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelActive(context: ChannelHandlerContext) {
        remote = context.channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timeout = context.eventLoop.scheduleTask(in: TimeAmount(handshakeTimeout)) {
            let handler = loopBound.value
            handler.perform(handler.channel.handshakeTimedOut())
        }
        if !outbound {
            let eventLoop = context.eventLoop
            let evicted = admission.handshakes.begin(id) {
                eventLoop.execute { loopBound.value.evictPendingHandshake() }
            }
            for close in evicted { close() }
        }
        perform(channel.start())
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard !finished else { return }
        hub.metrics.bytes(received: buffer.readableBytes)
        // Frames are parsed and decrypted straight out of NIO's buffer, not a copy of it.
        perform(buffer.withUnsafeReadableBytes { channel.receive($0) })
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !finished { perform(channel.inputClosed()) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if !finished { perform(channel.close(reason: "socket error: \(error)")) }
    }

    func read(context: ChannelHandlerContext) {
        if mustHoldReads { readHeld = true } else { context.read() }
    }

    /// Over its own 8 MiB, or the node over `maxQueuedMessageBytes` while this connection has a
    /// message waiting (one with none always reads, so every held connection is woken by the
    /// processing of its own messages).
    private var mustHoldReads: Bool {
        pendingBytes > Self.maxPendingBytes || (pendingBytes > 0 && admission.queued.isOver)
    }

    private func processed(_ size: Int) {
        pendingBytes -= size
        admission.queued.remove(size)
        if readHeld, !mustHoldReads, let context {
            readHeld = false
            context.read()
        }
    }

    /// Called by the hub (through the event loop) with one sync message to send. The frames are
    /// sealed straight into the buffer NIO writes, and flushed once for every message the hub
    /// queued meanwhile, so NIO hands the kernel several frames per `writev(2)`.
    /// Blob chunks waiting for the connection (docs/PROTOCOL.md §24.3): written only while
    /// fewer than `bulkWindowBytes` of them are in NIO's outbound buffer, so receipts, vectors and
    /// election messages (`send`) queue behind at most that much bulk, however large the transfer.
    private var bulk: [[UInt8]] = []
    private var bulkHead = 0
    private var bulkInFlight = 0
    /// Queued and in-flight bulk bytes, read by the blob transfers to refuse requests past a bound.
    let bulkBacklog = BulkBacklog()
    /// Bulk bytes written and not yet taken by the socket (2 MiB: two chunks keep the link busy).
    static let bulkWindowBytes = 2 << 20

    /// Sends a bulk message (a blob chunk) after every message `send` queues, up to the window.
    func sendBulk(_ message: [UInt8]) {
        guard !finished, context != nil else { return }
        bulkBacklog.bytes.add(message.count, ordering: .relaxed)
        bulk.append(message)
        pumpBulk()
    }

    private func pumpBulk() {
        while bulkHead < bulk.count, bulkInFlight < Self.bulkWindowBytes, !finished, let context {
            let message = bulk[bulkHead]
            bulk[bulkHead] = []
            bulkHead += 1
            let size = message.count
            bulkInFlight += size
            let promise = context.eventLoop.makePromise(of: Void.self)
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            promise.futureResult.whenComplete { _ in
                let handler = loopBound.value
                handler.bulkInFlight -= size
                handler.bulkBacklog.bytes.subtract(size, ordering: .relaxed)
                handler.pumpBulk()
            }
            send(message, promise: promise)
        }
        if bulkHead == bulk.count {
            bulk.removeAll(keepingCapacity: bulk.count < 64)
            bulkHead = 0
        } else if bulkHead > 1_024 {
            bulk.removeFirst(bulkHead)
            bulkHead = 0
        }
    }

    func send(_ message: [UInt8]) { send(message, promise: nil) }

    private func send(_ message: [UInt8], promise: EventLoopPromise<Void>?) {
        guard !finished, let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        do {
            let length = SecureChannel.wireLength(ofMessage: message.count)
            var buffer = context.channel.allocator.buffer(capacity: length)
            var failure: [ChannelAction] = []
            try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { out in
                let sealed = try message.withUnsafeBytes { try channel.send($0, into: out) }
                failure = sealed.actions
                return sealed.written
            }
            guard failure.isEmpty else {
                promise?.fail(ChannelError.ioOnClosedChannel)
                return perform(failure)
            }
            hub.metrics.bytes(sent: buffer.readableBytes)
            tapped(.outbound, message)
            context.write(wrapOutboundOut(buffer), promise: promise)
            flushSoon(context)
        } catch {
            promise?.fail(error)
            perform(channel.close(reason: "cannot send: \(error)"))
        }
    }

    /// Flushes after the tasks already queued on the event loop (the hub's other sends) ran.
    private func flushSoon(_ context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let handler = loopBound.value
            handler.flushPending = false
            handler.context?.flush()
        }
    }

    func close(reason: String) {
        guard !finished else {
            if handedOver { context?.close(promise: nil) }
            return
        }
        perform(channel.close(reason: reason))
    }

    /// The connection is a pairing guest's (`InboundSniffer`): let go of it without a word. The
    /// handler stays in the pipeline, passive, so that shutdown can still close the socket.
    func handOver() {
        guard !finished, !handshakeDone else { return }
        finished = true
        handedOver = true
        timeout?.cancel()
        admission.handshakes.end(id)
    }

    /// Closes this connection to make room for a newer handshake, unless it got established
    /// while the request travelled here.
    private func evictPendingHandshake() {
        guard !finished, !channel.isEstablished else { return }
        perform(
            channel.close(
                limit:
                    "\(admission.handshakes.capacity) handshakes in progress (maxPendingHandshakes); closing the oldest"
            ))
    }

    private func tapped(_ direction: TapRecord.Direction, _ message: [UInt8], kind: TapRecord.Kind = .message) {
        // The common case, no tap and no capture, costs two reads.
        guard tap != nil || hub.capture.isRunning, let peer = channel.peerCertificate?.device else { return }
        let record = TapRecord(
            time: WallClock.nowMillis(), kind: kind, direction: direction, connection: id, local: hub.device.device,
            peer: peer, message: message)
        tap?(record)
        hub.capture.tapped(record)
    }

    private func perform(_ actions: [ChannelAction]) {
        guard let context else { return }
        var wrote = false
        for action in actions {
            switch action {
            case .write(let bytes):
                hub.metrics.bytes(sent: bytes.count)
                context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
                wrote = true
            case .established(let certificate):
                handshakeDone = true
                timeout?.cancel()
                admission.handshakes.end(id)
                if let refusal = admission.identities.admit(certificate.identity) {
                    // Before the hub or a tap sees it; later actions of this batch are moot.
                    perform(channel.close(limit: refusal))
                    return
                }
                countedIdentity = certificate.identity
                hub.metrics.connectionOpened(outbound: outbound)
                tapped(outbound ? .outbound : .inbound, certificate.encoded, kind: .opened)
                if KeyLogFile.path != nil, let keys = channel.transportKeys {
                    let me = hub.device.device
                    let entry = KeyLogEntry(
                        keys: keys, initiator: outbound ? me : certificate.device,
                        responder: outbound ? certificate.device : me)
                    hub.capture.keyLog(entry)
                }
                onEstablished(certificate)
                let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
                let eventLoop = context.eventLoop
                hub.established(
                    ConnectionRef(
                        info: NodeConnection(
                            id: id, outbound: outbound, remote: remote, peer: certificate, since: WallClock.nowMillis()),
                        send: { bytes in eventLoop.execute { loopBound.value.send(bytes) } },
                        sendBulk: { bytes in eventLoop.execute { loopBound.value.sendBulk(bytes) } },
                        bulkBacklog: bulkBacklog,
                        close: { reason in eventLoop.execute { loopBound.value.close(reason: reason.description) } }
                    ))
            case .deliver(let message):
                tapped(.inbound, message)
                pendingBytes += message.count
                admission.queued.add(message.count)
                let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
                let eventLoop = context.eventLoop
                let size = message.count
                hub.received(message, on: id) { eventLoop.execute { loopBound.value.processed(size) } }
            case .closed(let reason):
                finished = true
                timeout?.cancel()
                admission.handshakes.end(id)
                let wasOpened = countedIdentity != nil
                hub.metrics.connectionClosed(established: handshakeDone, reason: reason)
                if let identity = countedIdentity {
                    admission.identities.release(identity)
                    countedIdentity = nil
                }
                if channel.reassemblyBytesFreedAtClose >= admission.limits.trimAfterFreeingBytes { MemoryTrim.soon() }
                let who = channel.peerCertificate.map { "device \($0.device)" } ?? "peer at \(remote)"
                switch reason {
                case .local, .remote: logger.info("connection \(id) to \(who) closed: \(reason)")
                default: logger.warning("connection \(id) to \(who) closed: \(reason)")
                }
                if wasOpened { tapped(.inbound, Array("\(reason)".utf8), kind: .closed) }
                hub.closed(id, peer: channel.peerCertificate?.device, remote: remote, reason: "\(reason)")
                onClosed(reason)
                let socket = context.channel
                context.writeAndFlush(wrapOutboundOut(socket.allocator.buffer(capacity: 0))).whenComplete { _ in
                    socket.close(promise: nil)
                }
                return
            }
        }
        if wrote { context.flush() }
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let c = duration.components
        self = .nanoseconds(c.seconds * 1_000_000_000 + c.attoseconds / 1_000_000_000)
    }
}
