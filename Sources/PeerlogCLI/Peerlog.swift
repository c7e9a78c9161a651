import ArgumentParser
@main struct Peerlog: ParsableCommand {}
