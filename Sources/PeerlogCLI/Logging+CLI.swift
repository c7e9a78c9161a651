import Logging

/// Sends every log line at `level` or above to standard error (`daemon`, `relay run`).
func bootstrapLogging(level: Logger.Level) {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
}
