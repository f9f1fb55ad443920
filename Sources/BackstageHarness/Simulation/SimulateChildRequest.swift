import Backstage
import Foundation

/// What the harness asks of `backstage-simulate-child`: one JSON value on the child's standard
/// input, its only input (it takes no arguments).
///
/// A request names one command — a `backstage` command run with a crash hook, or the fixture
/// states' killed writer — and, for the power-loss runs, the disk recorder to install first. The
/// `backstage` commands take `backstage`'s own arguments, read by `backstage`'s parser, so that the
/// child runs exactly what `backstage` would; `upgradeChain` is `upgrade`'s run given as its values
/// (container, plans, budget), which the simulator's crash points, random kills and reruns use to
/// skip parsing a command line, and which the child checks as `upgrade`'s parser does. What the
/// simulator adds (where to crash, what to record) is typed here. For example:
///
/// ```swift
/// let request = SimulateChildRequest(
///     .upgrade(arguments: [root.path, "--plan", plan.path], crashAt: CrashPoint(.relocate, .committed)))
/// // {"command":{"upgrade":{"arguments":["/tmp/app","--plan","v1-to-v2.json"],"crashAt":"relocate:committed@1"}},"format":1}
/// ```
///
/// The child exits as `backstage` does (0, 1 a check failed, 2 usage, 3 operational failure), is
/// killed by SIGKILL at the crash point or the recorder's cut, and refuses a request it cannot read
/// with exit status 2 and a ``SimulateChildRequestError`` on standard error.
public struct SimulateChildRequest: Sendable, Hashable {
    /// The request format; a child refuses a newer one.
    public static let currentFormat = 1

    public var format: Int
    public var command: Command
    /// Record the command's disk operations (the power-loss runs); nil: not recorded.
    public var recorder: Recorder?

    public init(_ command: Command, recorder: Recorder? = nil) {
        self.format = Self.currentFormat
        self.command = command
        self.recorder = recorder
    }

    /// What the child runs.
    public enum Command: Sendable, Hashable {
        /// `backstage upgrade` with these arguments (after `upgrade`), killed by SIGKILL the
        /// first time it reaches `crashAt`, which must be a boundary its plans can reach.
        case upgrade(arguments: [String], crashAt: CrashPoint? = nil)
        /// The upgrade `backstage upgrade CONTAINER --plan … --budget B [--json]` runs, given as its
        /// values: the child runs it without parsing a command line (the simulator's runs of every
        /// crash state). Killed at `crashAt` as `upgrade` is.
        case upgradeChain(UpgradeChain, crashAt: CrashPoint? = nil)
        /// `backstage relocate` with these arguments, killed when a move reaches `crashAt`.
        case relocate(arguments: [String], crashAt: StepPhase? = nil)
        /// `backstage import` with these arguments, killed at `crashAt` of its move-in.
        case `import`(arguments: [String], crashAt: ImportPoint? = nil)
        /// The killed writer of the fixture states.
        case fixtureWriter(FixtureWrite)

        /// The command's name in JSON.
        public var name: String {
            switch self {
            case .upgrade: "upgrade"
            case .upgradeChain: "upgradeChain"
            case .relocate: "relocate"
            case .import: "import"
            case .fixtureWriter: "fixtureWriter"
            }
        }

        /// Every command's name in JSON.
        public static let names = ["upgrade", "upgradeChain", "relocate", "import", "fixtureWriter"]
    }

    /// A boundary of an import's move-in, where `import` is killed: `journaled`, `moved:N` (N files
    /// moved in), `moved-in`, `staging-removed` — the import's own boundaries, which the child
    /// matches one for one.
    public enum ImportPoint: Sendable, Hashable, LosslessStringConvertible {
        case journaled
        /// After this many files (from 1) were moved in.
        case moved(Int)
        case movedIn
        case stagingRemoved

        public init?(_ text: String) {
            switch text {
            case "journaled": self = .journaled
            case "moved-in": self = .movedIn
            case "staging-removed": self = .stagingRemoved
            default:
                guard text.hasPrefix("moved:"), let count = Int(text.dropFirst("moved:".count)), count >= 1,
                    text == "moved:\(count)"
                else { return nil }
                self = .moved(count)
            }
        }

        public var description: String {
            switch self {
            case .journaled: "journaled"
            case .moved(let count): "moved:\(count)"
            case .movedIn: "moved-in"
            case .stagingRemoved: "staging-removed"
            }
        }

        /// The forms ``init(_:)`` reads.
        public static let forms = ["journaled", "moved:N", "moved-in", "staging-removed"]
    }

    /// An iOS-style container's upgrade through a chain of plans, with the launch budget; `json`
    /// prints the reports as `--json` does.
    public struct UpgradeChain: Sendable, Hashable {
        public var container: String
        public var plans: [String]
        public var budget: Double
        public var json: Bool

        public init(container: String, plans: [String], budget: Double, json: Bool) {
            self.container = container
            self.plans = plans
            self.budget = budget
            self.json = json
        }

        /// The command line `backstage upgrade` runs the same upgrade from (after `upgrade`).
        public var arguments: [String] {
            [container, "--budget", String(budget)] + plans.flatMap { ["--plan", $0] } + (json ? ["--json"] : [])
        }
    }

    /// The fixture states' writer: appends generated rows to a store of a catalog, then closes or
    /// dies as `ending` says.
    public struct FixtureWrite: Sendable, Hashable, Codable {
        /// The path of the store to append to.
        public var store: String
        /// The path of the catalog folder whose schema the rows follow.
        public var catalog: String
        /// The store's schema file, relative to the catalog.
        public var schema: String
        /// The same seed gives the same rows.
        public var seed: UInt64
        public var rows: Int
        public var ending: SchemaGenerator.Ending

        public init(
            store: String, catalog: String, schema: String, seed: UInt64, rows: Int, ending: SchemaGenerator.Ending
        ) {
            self.store = store
            self.catalog = catalog
            self.schema = schema
            self.seed = seed
            self.rows = rows
            self.ending = ending
        }
    }

    /// The disk recorder, installed before the command opens anything: every operation the command
    /// makes on the disk, one line each in ``log``.
    public struct Recorder: Sendable, Hashable, Codable {
        /// The path of the log, one line per disk operation.
        public var log: String
        /// The path of a folder that keeps every file an operation unlinks or replaces.
        public var stash: String?
        /// Kill the process with SIGKILL before operation N (from 0); nil: run to the end.
        public var cutBefore: Int?
        /// Folder fsyncs whose path ends with this are not made: a planted bug for the power-loss
        /// explorer's own tests.
        public var skippingFolderFsyncsEndingWith: String?

        public init(
            log: String, stash: String? = nil, cutBefore: Int? = nil, skippingFolderFsyncsEndingWith: String? = nil
        ) {
            self.log = log
            self.stash = stash
            self.cutBefore = cutBefore
            self.skippingFolderFsyncsEndingWith = skippingFolderFsyncsEndingWith
        }
    }

    /// The request as the child reads it: JSON, keys sorted.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Reads a request from the child's input.
    ///
    /// - Throws: ``SimulateChildRequestError`` saying what is wrong: nothing given, not JSON, a newer
    ///   format, an unknown command, a crash point the command has no such boundary for, a missing or
    ///   mistyped field.
    public static func decode(_ data: Data) throws(SimulateChildRequestError) -> SimulateChildRequest {
        guard data.contains(where: { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }) else { throw .empty }
        do {
            return try JSONDecoder().decode(Self.self, from: data)
        } catch let error as SimulateChildRequestError {
            throw error
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            throw .notJSON(Self.cause(context))
        } catch let error as DecodingError {
            throw .invalid(Self.describe(error))
        } catch {
            throw .invalid("\(error)")
        }
    }

    /// What JSON holds a value of `type`: `an object`, `a string`...
    private static func kind(_ type: Any.Type) -> String {
        switch "\(type)" {
        case let name where name.hasPrefix("Dictionary") || name.hasPrefix("KeyedDecodingContainer"): "an object"
        case let name where name.hasPrefix("Array"): "an array"
        case "String": "a string"
        case "Int", "UInt64", "Int64": "an integer"
        case "Bool": "true or false"
        default: "\(type)"
        }
    }

    private static func cause(_ context: DecodingError.Context) -> String {
        (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            ?? context.debugDescription
    }

    /// A decoding error in a few words, naming the field: `command.upgrade.arguments: missing`.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ key: CodingKey? = nil) -> String {
            let keys = context.codingPath + (key.map { [$0] } ?? [])
            guard !keys.isEmpty else { return "the request" }
            return keys.reduce("") { path, key in
                key.intValue.map { path + "[\($0)]" } ?? (path.isEmpty ? key.stringValue : path + "." + key.stringValue)
            }
        }
        return switch error {
        case .keyNotFound(let key, let context): "\(path(context, key)): missing"
        case .typeMismatch(let type, let context): "\(path(context)): not \(Self.kind(type))"
        case .valueNotFound(let type, let context): "\(path(context)): null where \(Self.kind(type)) is expected"
        case .dataCorrupted(let context): "\(path(context)): \(context.debugDescription)"
        @unknown default: "\(error)"
        }
    }
}

/// Why `backstage-simulate-child` refused a request: it runs nothing, and exits with status 2.
public enum SimulateChildRequestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing on the child's standard input.
    case empty
    /// The input is not JSON: the parser's words.
    case notJSON(String)
    /// The request is of a newer format than this child reads.
    case newerFormat(Int)
    /// The command has a name the child does not run.
    case unknownCommand(String)
    /// The crash point is not one of the command's boundaries: the text, the command, the forms it takes.
    case notACrashPoint(String, command: String, forms: [String])
    /// A field is missing, of the wrong type or out of range: which, and why.
    case invalid(String)

    public var description: String {
        switch self {
        case .empty:
            "no request: backstage-simulate-child reads one JSON request (SimulateChildRequest) on its standard input"
        case .notJSON(let cause): "the request is not JSON: \(cause)"
        case .newerFormat(let format):
            "the request is of format \(format), newer than this backstage-simulate-child reads (\(SimulateChildRequest.currentFormat))"
        case .unknownCommand(let name):
            "unknown command \"\(name)\" in the request; backstage-simulate-child runs "
                + SimulateChildRequest.Command.names.joined(separator: ", ")
        case .notACrashPoint(let text, let command, let forms):
            "\"\(text)\" is not a crash point of \(command); use one of: \(forms.joined(separator: ", "))"
        case .invalid(let reason): "the request is not valid: \(reason)"
        }
    }
}

extension SimulateChildRequest: Codable {
    private enum Keys: String, CodingKey { case format, command, recorder }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        // The format first: a newer request is refused before any of its fields is read.
        format = try container.decode(Int.self, forKey: .format)
        guard format <= Self.currentFormat else { throw SimulateChildRequestError.newerFormat(format) }
        command = try container.decode(Command.self, forKey: .command)
        recorder = try container.decodeIfPresent(Recorder.self, forKey: .recorder)
        if let cut = recorder?.cutBefore, cut < 0 {
            throw SimulateChildRequestError.invalid("recorder.cutBefore: \(cut), must be 0 or more")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(format, forKey: .format)
        try container.encode(command, forKey: .command)
        try container.encodeIfPresent(recorder, forKey: .recorder)
    }
}

extension SimulateChildRequest.Command: Codable {
    /// One key, the command's name: `{"upgrade": {"arguments": [...], "crashAt": "split:copied@1"}}`.
    private struct Name: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private enum Fields: String, CodingKey { case arguments, crashAt }
    private enum ChainFields: String, CodingKey { case container, plans, budget, json, crashAt }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Name.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw SimulateChildRequestError.invalid(
                "command: one key, the command's name (\(Self.names.joined(separator: ", "))), not "
                    + "\(container.allKeys.count) (\(container.allKeys.map(\.stringValue).joined(separator: ", ")))")
        }
        func wrapped() throws -> (arguments: [String], crashAt: String?) {
            let fields = try container.nestedContainer(keyedBy: Fields.self, forKey: key)
            return (
                try fields.decode([String].self, forKey: .arguments),
                try fields.decodeIfPresent(String.self, forKey: .crashAt)
            )
        }
        func point<Point>(
            _ text: String?, _ read: (String) -> Point?, forms: [String], shape: String? = nil
        ) throws -> Point? {
            guard let text else { return nil }
            guard let point = read(text) else {
                let command = key.stringValue + (shape.map { " (\($0))" } ?? "")
                throw SimulateChildRequestError.notACrashPoint(text, command: command, forms: forms)
            }
            return point
        }
        switch key.stringValue {
        case "upgrade":
            let (arguments, crashAt) = try wrapped()
            self = .upgrade(
                arguments: arguments,
                crashAt: try point(crashAt, { CrashPoint($0) }, forms: CrashPoint.forms, shape: "kind:phase[@N]"))
        case "upgradeChain":
            let fields = try container.nestedContainer(keyedBy: ChainFields.self, forKey: key)
            self = .upgradeChain(
                SimulateChildRequest.UpgradeChain(
                    container: try fields.decode(String.self, forKey: .container),
                    plans: try fields.decode([String].self, forKey: .plans),
                    budget: try fields.decode(Double.self, forKey: .budget),
                    json: try fields.decodeIfPresent(Bool.self, forKey: .json) ?? false),
                crashAt: try point(
                    try fields.decodeIfPresent(String.self, forKey: .crashAt), { CrashPoint($0) },
                    forms: CrashPoint.forms, shape: "kind:phase[@N]"))
        case "relocate":
            let (arguments, crashAt) = try wrapped()
            self = .relocate(
                arguments: arguments,
                crashAt: try point(crashAt, { StepPhase(rawValue: $0) }, forms: StepPhase.allCases.map(\.rawValue)))
        case "import":
            let (arguments, crashAt) = try wrapped()
            self = .import(
                arguments: arguments,
                crashAt: try point(
                    crashAt, { SimulateChildRequest.ImportPoint($0) }, forms: SimulateChildRequest.ImportPoint.forms))
        case "fixtureWriter":
            self = .fixtureWriter(try container.decode(SimulateChildRequest.FixtureWrite.self, forKey: key))
        default:
            throw SimulateChildRequestError.unknownCommand(key.stringValue)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Name.self)
        let key = Name(stringValue: name)
        func wrapped(_ arguments: [String], _ crashAt: (some CustomStringConvertible)?) throws {
            var fields = container.nestedContainer(keyedBy: Fields.self, forKey: key)
            try fields.encode(arguments, forKey: .arguments)
            try fields.encodeIfPresent(crashAt?.description, forKey: .crashAt)
        }
        switch self {
        case .upgrade(let arguments, let crashAt): try wrapped(arguments, crashAt)
        case .upgradeChain(let chain, let crashAt):
            var fields = container.nestedContainer(keyedBy: ChainFields.self, forKey: key)
            try fields.encode(chain.container, forKey: .container)
            try fields.encode(chain.plans, forKey: .plans)
            try fields.encode(chain.budget, forKey: .budget)
            try fields.encode(chain.json, forKey: .json)
            try fields.encodeIfPresent(crashAt?.description, forKey: .crashAt)
        case .relocate(let arguments, let crashAt): try wrapped(arguments, crashAt?.rawValue)
        case .import(let arguments, let crashAt): try wrapped(arguments, crashAt)
        case .fixtureWriter(let write): try container.encode(write, forKey: key)
        }
    }
}
