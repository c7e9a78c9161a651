// The sync protocol: message codec and session state machine.
