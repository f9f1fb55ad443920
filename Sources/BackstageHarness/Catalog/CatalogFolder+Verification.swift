import Backstage
import Foundation

/// What `simulate` checks after an upgrade, for a user's own tests: schemas against a fresh
/// install's, and the version's data checks.
///
/// ```swift
/// let before = try catalog.dataCheckResultsBefore(upgrading: "v1", to: "v3", in: container)
/// try await Upgrader(container: container).upgrade(catalog.chainPlan(from: "v1", to: "v3"))
/// #expect(try catalog.schemaFailures(of: "v3", in: container).isEmpty)
/// #expect(try catalog.dataCheckFailures(of: "v3", in: container, before: before).isEmpty)
/// ```
extension CatalogFolder {
    /// The plans from `from` to `to` as one chain (see `UpgradePlan/init(chain:)`), each knowing
    /// the version it reaches.
    public func chainPlan(from: String, to: String) throws -> UpgradePlan {
        UpgradePlan(chain: try chain(from: from, to: to).map(\.plan))
    }

    /// One line per difference between each store of `version` in `container` and the schema a
    /// fresh install creates (or, where the catalog has none, the schema recorded for the
    /// version); empty when they agree. A store that is not there is not reported here.
    public func schemaFailures(of version: String, in container: AppContainer) throws -> [String] {
        var found: [String: SchemaDescription] = [:]
        for store in try self.version(version).stores {
            let url = store.location.url(in: container)
            guard FileManager.default.fileExists(atPath: url.path) else { continue }
            found[store.location.description] = try SchemaDescription(contentsOf: url)
        }
        var expected: [String: ExpectedSchema] = [:]
        return try schemaFailures(of: version, found: found, expected: &expected)
    }

    /// The schema a store must have after an upgrade, and where it comes from.
    struct ExpectedSchema {
        var description: SchemaDescription
        var source: String
    }

    /// ``schemaFailures(of:in:)`` for the schemas `found` (by store location; a store not there is
    /// left out), each store's expected schema taken from `expected` when an earlier call built it
    /// (keyed by version and store): it depends on the catalog's files only, which a simulation
    /// never changes, and rebuilding it (a recorded schema decoded and created in memory) cost a
    /// simulated run more than its upgrade on a store of many indexes.
    func schemaFailures(
        of version: String, found: [String: SchemaDescription], expected: inout [String: ExpectedSchema]
    ) throws -> [String] {
        var failures: [String] = []
        for store in try self.version(version).stores {
            guard let actual = found[store.location.description] else { continue }
            let key = "\(version) \(store.location)"
            let schema: ExpectedSchema
            if let known = expected[key] {
                schema = known
            } else if let fresh = store.freshInstall {
                schema = ExpectedSchema(
                    description: try SchemaDescription(contentsOf: self.url.appending(path: fresh)),
                    source: "a fresh install")
            } else {
                schema = ExpectedSchema(
                    description: try SchemaDescription(self.schema(of: store)),
                    source: "the schema recorded for \(version)")
            }
            expected[key] = schema
            for difference in schema.description.differences(from: actual) {
                failures.append("schema of \(store.location) differs from \(schema.source): \(difference)")
            }
        }
        return failures
    }

    /// The results of `to`'s `unchanged` data checks on `container` while it is still at `from`:
    /// what ``dataCheckFailures(of:in:before:)`` compares with after the upgrade.
    public func dataCheckResultsBefore(
        upgrading from: String, to: String, in container: AppContainer
    ) throws -> [String: [[CheckValue]]] {
        let stores = try version(from).stores.map { StoreFileSet(main: $0.location.url(in: container)) }
        var results: [String: [[CheckValue]]] = [:]
        for check in try version(to).checks ?? [] where check.expect == .unchanged {
            results[check.name] = check.resultBefore(in: stores)
        }
        return results
    }

    /// One line per data check of `version` that fails on `container`, naming the check.
    public func dataCheckFailures(
        of version: String, in container: AppContainer, before: [String: [[CheckValue]]] = [:]
    ) throws -> [String] {
        var failures: [String] = []
        for check in try self.version(version).checks ?? [] {
            do {
                let after = try check.result(of: StoreFileSet(main: check.store.url(in: container)))
                if let failure = check.failure(after: after, before: before[check.name]) { failures.append(failure) }
            } catch {
                failures.append("check \"\(check.name)\" could not run on \(check.store): \(error)")
            }
        }
        return failures
    }
}

/// Finds the `backstage` executable that runs crash-injected simulations and killed writers in
/// child processes, for a user's test target.
///
/// SwiftPM does not build a dependency's executables for `swift test`: build it first, with
/// `swift build --product backstage` (and `--product backstage-simulate-child`, which runs the
/// killed writers and upgrades beside it), and it is found beside the test bundle. Or set
/// `BACKSTAGE_EXECUTABLE` to its path (an installed one, `make install`).
public enum BackstageExecutable {
    public static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        if let path = environment["BACKSTAGE_EXECUTABLE"], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw FixtureError.executableNotFound(reason: "BACKSTAGE_EXECUTABLE=\(path) is not an executable file")
            }
            return URL(filePath: path)
        }
        let running = URL(
            filePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0])
        var candidates = [
            running.deletingLastPathComponent(), running.deletingLastPathComponent().deletingLastPathComponent(),
            URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ]
        candidates += (environment["PATH"] ?? "").split(separator: ":").map { URL(filePath: String($0)) }
        for folder in candidates {
            let url = folder.appending(path: "backstage")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw FixtureError.executableNotFound(
            reason:
                "not beside the test bundle nor on PATH; run `swift build --product backstage` before `swift test`, or set BACKSTAGE_EXECUTABLE"
        )
    }
}
