import ArgumentParser

/// `peerlog device …`: this identity's devices.
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device", abstract: "This identity's devices: link a new one.", subcommands: [DeviceLink.self])
}
