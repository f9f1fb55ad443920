import Backstage
import Foundation

extension CoreDataCatalog {
    /// The folder of a model catalog that keeps the developer's SQL for custom migration policies:
    /// `model/policies/<Entity>.sql`, run instead of the copy of that destination entity's rows
    /// wherever a mapping model names a migration policy for it.
    public static let policyFolder = "model/policies"

    /// Where the version hashes and the developer's SQL of a model catalog's plans come from.
    public struct PlanSources: Sendable {
        /// A compiled model (`App.momd`, holding `VersionInfo.plist`): every version's hashes.
        public var compiledModel: URL?
        /// Destination entity → the developer's SQL for its custom migration policy.
        public var policySQL: [String: String]

        public init(compiledModel: URL? = nil, policySQL: [String: String] = [:]) {
            self.compiledModel = compiledModel
            self.policySQL = policySQL
        }
    }

    /// Writes, between each pair of consecutive versions of `catalog` (made from a model, its model
    /// kept), the plan `plans/<from>-to-<to>.json` whose one step is Core Data's migration of the
    /// writable store (`UpgradeStep.CoreDataMigration`): inferred, or following the mapping model
    /// kept for the pair. The destination's version hashes come from `sources.compiledModel`, else a
    /// store captured into the destination version, else are reproduced; when none gives them the
    /// plan still is written, its program unresolved (the plan is then refused when read).
    ///
    /// - returns: One sentence per pair that needs saying (hashes unresolved, no plan written and
    ///   why), each naming both model versions.
    @discardableResult
    public static func writePlans(in catalog: inout CatalogFolder, sources: PlanSources = .init()) throws -> [String] {
        guard let kept = try keptModel(of: catalog) else { return [] }
        let policies = try policySQL(of: catalog, adding: sources.policySQL)
        let hashes = try sources.compiledModel.map { try compiledHashes(in: $0) } ?? [:]
        var notes: [String] = []
        let versions = catalog.manifest.versions
        // A compiled model's hashes are Core Data's: the stores made from the model (fixtures) carry them.
        for version in versions {
            guard let modelVersion = kept.version(forCatalogVersion: version.name),
                let given = hashes[modelVersion.name]
            else { continue }
            for store in version.stores {
                var schema = try catalog.schema(of: store)
                guard !isCaptured(schema), schema.coreData != nil else { continue }
                schema.coreData?.versionHashes = given.mapValues { $0.base64EncodedString() }
                try catalog.write(schema, at: store.schema)
            }
        }
        for (index, (previous, next)) in zip(versions, versions.dropFirst()).enumerated() {
            guard let source = kept.version(forCatalogVersion: previous.name),
                let destination = kept.version(forCatalogVersion: next.name),
                let from = previous.writableStore
            else { continue }
            // Three shapes: one store to one store; one store to the stores of the destination's
            // configurations (the migration, then the split by configuration); stores of
            // configurations to the same stores (a migration of each).
            let bookkeeping: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
            let migrated: [(before: CatalogStore, after: CatalogStore)]
            var splitInto: [CatalogStore]? = nil
            var relocation: (from: ContainerLocation, to: ContainerLocation)? = nil
            if previous.stores.count > 1 {
                let pairs = next.stores.compactMap { after in
                    previous.stores.first { $0.location == after.location }.map { (before: $0, after: after) }
                }
                guard pairs.count == next.stores.count, pairs.count == previous.stores.count else {
                    notes.append(
                        "\(source.name) → \(destination.name): no plan written: \(source.name) keeps its entities in "
                            + "the stores of its configurations (\(previous.stores.map(\.location.description).joined(separator: ", "))) "
                            + "and \(destination.name) in others (\(next.stores.map(\.location.description).joined(separator: ", "))); "
                            + "moving entities between configuration stores is not written by this release")
                    continue
                }
                migrated = pairs
            } else if next.stores.count > 1 {
                migrated = [(from, from)]
                splitInto = next.stores
            } else {
                guard let to = next.writableStore else { continue }
                // The newest version keeps its store elsewhere (out of Documents): moved there first.
                if to.location != from.location { relocation = (from.location, to.location) }
                migrated = [(from, to)]
            }
            let captured = try capturedHashes(of: next, in: catalog)
            var options = CoreDataMigrationCompiler.Options(
                compiledModelHashes: hashes[destination.name], capturedStoreHashes: captured)
            options.sourceHashes = try hashes[source.name] ?? capturedHashes(of: previous, in: catalog)
            let mapping = kept.mapping(from: source.name, to: destination.name)
            var programs: [(store: ContainerLocation, program: CoreDataMigrationProgram)] = []
            var how = "Core Data's inferred migration"
            do {
                for (before, after) in migrated {
                    var options = options
                    if previous.stores.count > 1 {
                        options.configurationTables = (
                            Set(before.tables).subtracting(bookkeeping), Set(after.tables).subtracting(bookkeeping)
                        )
                    }
                    let program: CoreDataMigrationProgram
                    if let mapping {
                        how = "the mapping model \(mapping.name).xcmappingmodel"
                        let custom = mapping.customPolicies.compactMap {
                            entity -> CoreDataMigrationCompiler.CustomSQL? in
                            guard let name = entity.destinationEntity, let sql = policies[name] else { return nil }
                            return .init(destinationEntity: name, statements: [sql])
                        }
                        if !custom.isEmpty {
                            how +=
                                " and the developer's SQL for \(custom.map(\.destinationEntity).sorted().joined(separator: ", "))"
                        }
                        program = try CoreDataMigrationCompiler.compile(
                            from: source, to: destination, mappingModel: mapping, customSQL: custom, options: options)
                    } else {
                        program = try CoreDataMigrationCompiler.compile(
                            from: source, to: destination, options: options)
                    }
                    // Rows of another store would be needed: an entity moved between configurations.
                    let foreign = Set(program.tablesRead).subtracting(before.tables)
                    if !foreign.isEmpty {
                        throw ConfigurationProblem(
                            "the store \(after.location) of \(destination.name) takes rows of "
                                + "\(foreign.sorted().joined(separator: ", ")), which \(source.name) keeps in another store; "
                                + "moving entities between configuration stores is not written by this release")
                    }
                    programs.append((after.location, program))
                }
            } catch {
                notes.append("\(source.name) → \(destination.name): no plan written: \(error)")
                continue
            }
            let name = "\(previous.name)-to-\(next.name)"
            var steps: [UpgradeStep] = []
            if let relocation {
                steps.append(.relocate(from: relocation.from, to: relocation.to))
                how = "a relocation from \(relocation.from) to \(relocation.to), then " + how
            }
            // A migration that changes nothing Core Data stores (the versions differ in their
            // configurations only) is left out of a plan with other steps: every store of the
            // source is already the destination's to it, so it could only be skipped, and its crash
            // points would never fire.
            let changing = programs.filter { !Self.changesNothing($0.program) }
            let migrations = changing.isEmpty && (relocation != nil || splitInto != nil) ? [] : programs
            if migrations.isEmpty { how = "no Core Data migration (both versions store their entities alike)" }
            steps += migrations.map { .coreDataMigration(.init(store: $0.store, program: $0.program)) }
            if let splitInto {
                steps.append(
                    .split(
                        from.location,
                        into: splitInto.map {
                            .init(store: $0.location, tables: $0.tables.filter { !bookkeeping.contains($0) })
                        }))
                how +=
                    ", then split by configuration into \(splitInto.map(\.location.description).joined(separator: ", "))"
            } else if programs.count > 1 {
                how += " of each of its \(programs.count) configuration stores"
            }
            // Out of Documents: what a store left there (sidecars of a deleted store, a temporary)
            // is set aside, as the layout without a store in Documents requires.
            if previous.stores.contains(where: { $0.location.root == .documents }),
                !next.stores.contains(where: { $0.location.root == .documents })
            {
                steps.append(.quarantine())
                how += ", then a quarantine of what is left of internal files in Documents"
            }
            let program = programs[0].program
            let plan = UpgradePlan(name: name, version: next.name, steps: steps)
            let file = "plans/\(name).json"
            try CatalogFolder.write(plan, to: catalog.url.appending(path: file))
            var summary = "Core Data model version \"\(destination.name)\" of \(kept.model.name).xcdatamodeld"
            if destination.name == kept.model.currentVersion { summary += " (current: the app builds with it)" }
            summary += "; reached from \(source.name) by \(how)"
            if let source = program.metadata.versionHashesSource {
                summary += ", version hashes from the " + hashSourceWords(source)
            } else if !migrations.isEmpty {
                let missing = program.unresolved.map(\.description).joined(separator: "; ")
                summary += "; UNRESOLVED: \(missing)"
                // Why they are not reproduced: what of each entity no real store proves.
                var why = ""
                if case .failure(let unproven) = CoreDataVersionHasher.hashes(of: destination) {
                    why = " (not reproduced: no real store proves the hash of \(unproven.explained))"
                }
                notes.append(
                    "\(source.name) → \(destination.name): \(missing)\(why). The plan is refused until then; "
                        + "`simulate --omit-missing-hashes` and `bench --omit-missing-hashes` run it without them")
            }
            let v = index + 1
            catalog.manifest.versions[v].plan = file
            catalog.manifest.versions[v].summary = summary
            catalog.manifest.versions[v].frozen = try PlanFingerprint(of: plan)
        }
        try catalog.writeManifest()
        return notes
    }

    /// True when `program` turns a store of its source into one its source's stores already are:
    /// the same tables, columns and entity numbers, the same version identifiers and hashes.
    static func changesNothing(_ program: CoreDataMigrationProgram) -> Bool {
        guard let source = program.sourceSignature, let destination = program.destinationSignature,
            let metadata = program.sourceMetadata
        else { return false }
        return source == destination && metadata.versionIdentifiers == program.metadata.versionIdentifiers
            && metadata.versionHashes == program.metadata.versionHashes
    }

    /// The developer's SQL kept in `catalog` for each destination entity of a custom policy.
    static func keptPolicySQL(of catalog: CatalogFolder) throws -> [String: String] {
        try policySQL(of: catalog, adding: [:])
    }

    /// The version hashes of the store captured into `version`, nil when none was captured.
    static func capturedHashes(of version: CatalogVersion, in catalog: CatalogFolder) throws -> [String: Data]? {
        guard let store = version.writableStore else { return nil }
        let schema = try catalog.schema(of: store)
        guard isCaptured(schema), let hashes = schema.coreData?.versionHashes, !hashes.isEmpty else { return nil }
        return hashes.compactMapValues { Data(base64Encoded: $0) }
    }

    static func hashSourceWords(_ source: CoreDataMigrationProgram.VersionHashSource) -> String {
        switch source {
        case .compiledModel: "compiled model"
        case .capturedStore: "captured store"
        case .reproduced: "model (reproduced)"
        }
    }

    /// Copies each given SQL file's content into the catalog (``policyFolder``) and returns every
    /// entity's SQL the catalog keeps.
    static func policySQL(of catalog: CatalogFolder, adding given: [String: String]) throws -> [String: String] {
        let folder = catalog.url.appending(path: policyFolder, directoryHint: .isDirectory)
        let manager = FileManager.default
        if !given.isEmpty { try manager.createDirectory(at: folder, withIntermediateDirectories: true) }
        for (entity, sql) in given { try Data(sql.utf8).write(to: folder.appending(path: "\(entity).sql")) }
        var result: [String: String] = [:]
        for name in (try? manager.contentsOfDirectory(atPath: folder.path)) ?? [] where name.hasSuffix(".sql") {
            result[String(name.dropLast(4))] = try String(contentsOf: folder.appending(path: name), encoding: .utf8)
        }
        return result
    }

    /// Every version's hashes in a compiled model (`App.momd`, or its `VersionInfo.plist`).
    static func compiledHashes(in url: URL) throws -> [String: [String: Data]] {
        let plist = url.lastPathComponent == "VersionInfo.plist" ? url : url.appending(path: "VersionInfo.plist")
        let data = try Data(contentsOf: plist)
        let decoded = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        let versions = (decoded as? [String: Any])?["NSManagedObjectModel_VersionHashes"] as? [String: Any] ?? [:]
        return versions.compactMapValues { $0 as? [String: Data] }
    }
}

extension CoreDataCatalog.KeptModel {
    /// The mapping model kept for model versions `source` → `destination`: one that fits that pair
    /// alone (as `catalog lint` takes it), nil for an inferred migration.
    func mapping(from source: String, to destination: String) -> CoreDataMappingModel? {
        mappings.first { mapping in
            let pairs = mapping.versions(in: model)
            return pairs.count == 1 && pairs[0].source == source && pairs[0].destination == destination
        }
    }
}
