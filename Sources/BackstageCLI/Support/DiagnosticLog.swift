import Logging

/// The CLI's diagnostics: it is the only place logging is bootstrapped, with warnings on stderr
/// and debug messages with `--verbose`.
enum DiagnosticLog {
    static func makeLogger(verbose: Bool) -> Logger {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .warning
            return handler
        }
        return Logger(label: "backstage")
    }
}
