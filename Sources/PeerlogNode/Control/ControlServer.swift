import Foundation
import NIOCore
import PeerlogQuickCalls

/// The local control socket: one request line in, one JSON document out, then close.
/// Requests: `status`. Only processes that can open the socket file (mode 0600) may ask.
final class ControlHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    static let maxRequestBytes = HomeLayout.maxControlRequestBytes

    private var request: [UInt8] = []
    private let answer: @Sendable (String, @escaping @Sendable ([UInt8]) -> Void) -> Void

    init(answer: @escaping @Sendable (String, @escaping @Sendable ([UInt8]) -> Void) -> Void) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        request += buffer.readBytes(length: buffer.readableBytes) ?? []
        if request.count > Self.maxRequestBytes {
            Self.write(context, ControlReply.error("request longer than \(Self.maxRequestBytes) bytes"))
            return
        }
        guard let newline = request.firstIndex(of: UInt8(ascii: "\n")) else { return }
        let line = String(decoding: request[..<newline], as: UTF8.self).trimmingCharacters(in: .whitespaces)
        request = []
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        answer(line) { bytes in
            eventLoop.execute { ControlHandler.write(loopBound.value, bytes) }
        }
    }

    private static func write(_ context: ChannelHandlerContext, _ bytes: [UInt8]) {
        let socket = context.channel
        socket.writeAndFlush(socket.allocator.buffer(bytes: bytes + [UInt8(ascii: "\n")])).whenComplete { _ in
            socket.close(promise: nil)
        }
    }
}

/// Replies that are not a status document.
package enum ControlReply {
    package static func error(_ message: String) -> [UInt8] {
        let body = (try? JSONEncoder().encode(["error": message])) ?? Data()
        return Array(body)
    }
}
