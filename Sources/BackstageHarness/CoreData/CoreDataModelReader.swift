import Foundation

/// Why a model bundle could not be read: the file and the cause.
public struct CoreDataModelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Hashable {
        /// The path is neither an `.xcdatamodeld` bundle nor an `.xcdatamodel` folder.
        case notAModel
        /// The bundle holds no `.xcdatamodel` version.
        case noVersions
        /// The file could not be read (the system's sentence).
        case unreadable(String)
        /// The XML is not well formed (the parser's sentence, with the line).
        case malformedXML(String)
        /// An element lacks an attribute it needs.
        case missingAttribute(element: String, attribute: String)
        /// An attribute's value is not one Core Data knows.
        case invalidValue(element: String, attribute: String, value: String)
        /// `.xccurrentversion` is not the plist Xcode writes, or names a version the bundle lacks.
        case invalidCurrentVersion(String)
        /// The explicit order does not list every version exactly once.
        case invalidOrder(String)
        /// Two entities of one version have the same name, or an entity names a parent, destination
        /// or inverse the version lacks.
        case inconsistentModel(String)
    }

    /// The file (or folder) that could not be read.
    public var path: String
    /// Why it could not be read.
    public var reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .notAModel: "\(path) is not a Core Data model (an .xcdatamodeld bundle or an .xcdatamodel folder)"
        case .noVersions: "\(path) holds no .xcdatamodel version"
        case .unreadable(let cause): "cannot read \(path): \(cause)"
        case .malformedXML(let cause): "\(path) is not a well-formed model file: \(cause)"
        case .missingAttribute(let element, let attribute):
            "\(path): a <\(element)> has no \(attribute)=\"...\""
        case .invalidValue(let element, let attribute, let value):
            "\(path): <\(element) \(attribute)=\"\(value)\"> is not a value Core Data knows"
        case .invalidCurrentVersion(let cause): "\(path): \(cause)"
        case .invalidOrder(let cause): "\(path): the version order given \(cause)"
        case .inconsistentModel(let cause): "\(path): \(cause)"
        }
    }
}

/// Reads Xcode's Core Data model files: an `.xcdatamodeld` bundle (every `.xcdatamodel` version and
/// `.xccurrentversion`) or a single `.xcdatamodel` folder.
public enum CoreDataModelReader {
    /// Reads the bundle (or single version) at `url`.
    ///
    /// Versions are ordered by their names the way Xcode and Finder sort them (numbers by value,
    /// letters without regard to case: `App`, `App 2`, `App 10`), unless `order` lists every version
    /// name (without `.xcdatamodel`) in the order the app shipped them. A current version that is not
    /// the newest is reported in ``CoreDataModel/warnings``, never reordered.
    public static func read(_ url: URL, order: [String]? = nil) throws -> CoreDataModel {
        let path = url.path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
            throw CoreDataModelError(
                path: path,
                reason: FileManager.default.fileExists(atPath: path) ? .notAModel : .unreadable("no such folder"))
        }
        let bundleName = url.deletingPathExtension().lastPathComponent
        if url.pathExtension == "xcdatamodel" {
            let version = try readVersion(url)
            return CoreDataModel(name: bundleName, versions: [version], currentVersion: version.name, warnings: [])
        }
        guard url.pathExtension == "xcdatamodeld" else { throw CoreDataModelError(path: path, reason: .notAModel) }
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw CoreDataModelError(path: path, reason: .unreadable(error.localizedDescription))
        }
        var names = entries.filter { $0.hasSuffix(".xcdatamodel") }.map { String($0.dropLast(".xcdatamodel".count)) }
        guard !names.isEmpty else { throw CoreDataModelError(path: path, reason: .noVersions) }
        if let order {
            let unknown = order.filter { !names.contains($0) }
            let missing = names.filter { !order.contains($0) }
            guard unknown.isEmpty, missing.isEmpty, Set(order).count == order.count else {
                var parts: [String] = []
                if !unknown.isEmpty { parts.append("names \(unknown.joined(separator: ", ")), not in the bundle") }
                if !missing.isEmpty { parts.append("leaves out \(missing.joined(separator: ", "))") }
                if Set(order).count != order.count { parts.append("names a version twice") }
                throw CoreDataModelError(path: path, reason: .invalidOrder(parts.joined(separator: " and ")))
            }
            names = order
        } else {
            names.sort { Self.finderOrder($0, $1) }
        }
        let versions = try names.map { try readVersion(url.appending(path: $0 + ".xcdatamodel")) }
        var warnings: [CoreDataModelWarning] = []
        let current = try currentVersion(of: url, among: names)
        if let current, let newest = names.last, current != newest {
            warnings.append(.currentIsNotNewest(bundle: url.lastPathComponent, current: current, newest: newest))
        } else if current == nil {
            warnings.append(.noCurrentVersion(bundle: url.lastPathComponent))
        }
        return CoreDataModel(name: bundleName, versions: versions, currentVersion: current, warnings: warnings)
    }

    /// Finder's order of names (`localizedStandardCompare`): runs of digits by their value, letters
    /// without regard to case, spaces before punctuation before digits before letters; a name that
    /// is a prefix of another comes first (`App`, `App 2`, `App9`, `App 10`).
    public static func finderOrder(_ a: String, _ b: String) -> Bool {
        func rank(_ scalar: Unicode.Scalar) -> Int {
            if CharacterSet.whitespaces.contains(scalar) { return 0 }
            if CharacterSet.decimalDigits.contains(scalar) { return 2 }
            if CharacterSet.letters.contains(scalar) { return 3 }
            return 1
        }
        let x = Array(a.lowercased().unicodeScalars)
        let y = Array(b.lowercased().unicodeScalars)
        var i = 0
        var j = 0
        while i < x.count && j < y.count {
            let (p, q) = (x[i], y[j])
            if rank(p) == 2 && rank(q) == 2 {
                var m = i
                var n = j
                while m < x.count && rank(x[m]) == 2 { m += 1 }
                while n < y.count && rank(y[n]) == 2 { n += 1 }
                let left = String(String.UnicodeScalarView(x[i..<m])).drop { $0 == "0" }
                let right = String(String.UnicodeScalarView(y[j..<n])).drop { $0 == "0" }
                if left.count != right.count { return left.count < right.count }
                if left != right { return left < right }
                (i, j) = (m, n)
                continue
            }
            if rank(p) != rank(q) { return rank(p) < rank(q) }
            if p != q { return p.value < q.value }
            i += 1
            j += 1
        }
        if x.count - i != y.count - j { return x.count - i < y.count - j }
        return a < b
    }

    /// The version `.xccurrentversion` names, nil when the bundle has no such file.
    static func currentVersion(of bundle: URL, among names: [String]) throws -> String? {
        let file = bundle.appending(path: ".xccurrentversion")
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        let data: Data
        do { data = try Data(contentsOf: file) } catch {
            throw CoreDataModelError(path: file.path, reason: .unreadable(error.localizedDescription))
        }
        struct Current: Decodable {
            var name: String?
            enum CodingKeys: String, CodingKey { case name = "_XCCurrentVersionName" }
        }
        let current: Current
        do { current = try PropertyListDecoder().decode(Current.self, from: data) } catch {
            throw CoreDataModelError(
                path: file.path, reason: .invalidCurrentVersion("is not the property list Xcode writes"))
        }
        guard let named = current.name else {
            throw CoreDataModelError(path: file.path, reason: .invalidCurrentVersion("names no _XCCurrentVersionName"))
        }
        let name = named.hasSuffix(".xcdatamodel") ? String(named.dropLast(".xcdatamodel".count)) : named
        guard names.contains(name) else {
            throw CoreDataModelError(
                path: file.path, reason: .invalidCurrentVersion("names \(named), which the bundle does not hold"))
        }
        return name
    }

    /// Reads one `.xcdatamodel` folder's `contents`.
    public static func readVersion(_ folder: URL) throws -> CoreDataModelVersion {
        let file = folder.appending(path: "contents")
        let data: Data
        do { data = try Data(contentsOf: file) } catch {
            throw CoreDataModelError(path: file.path, reason: .unreadable(error.localizedDescription))
        }
        let delegate = ContentsParser(path: file.path)
        let parser = XMLEventParser(data: data)
        parser.delegate = delegate
        let parsed = parser.parse()
        if let error = delegate.error { throw error }
        guard parsed else {
            let cause = parser.parserError.map { "\($0)" }
            throw CoreDataModelError(path: file.path, reason: .malformedXML(cause ?? "line \(parser.lineNumber)"))
        }
        guard delegate.sawModel else {
            throw CoreDataModelError(path: file.path, reason: .malformedXML("it has no <model> element"))
        }
        let version = CoreDataModelVersion(
            name: folder.deletingPathExtension().lastPathComponent, versionIdentifier: delegate.versionIdentifier,
            entities: delegate.entities, configurations: delegate.configurations)
        try check(version, path: file.path)
        return version
    }

    static func check(_ version: CoreDataModelVersion, path: String) throws {
        var names = Set<String>()
        for entity in version.entities where !names.insert(entity.name).inserted {
            throw CoreDataModelError(path: path, reason: .inconsistentModel("two entities are named \(entity.name)"))
        }
        for entity in version.entities {
            if let parent = entity.parentEntity, !names.contains(parent) {
                throw CoreDataModelError(
                    path: path,
                    reason: .inconsistentModel("entity \(entity.name) names parent \(parent), not in the model"))
            }
            for relationship in entity.relationships {
                guard let destination = version.entity(named: relationship.destinationEntity) else {
                    throw CoreDataModelError(
                        path: path,
                        reason: .inconsistentModel(
                            "\(entity.name).\(relationship.name) points at \(relationship.destinationEntity), not in the model"
                        ))
                }
                if let inverse = relationship.inverseName,
                    !Self.relationships(of: destination, in: version).contains(where: { $0.name == inverse })
                {
                    throw CoreDataModelError(
                        path: path,
                        reason: .inconsistentModel(
                            "\(entity.name).\(relationship.name) names inverse \(inverse), which \(destination.name) lacks"
                        ))
                }
            }
        }
        var seen = Set<String>()
        var ancestor: [String: String] = [:]
        for entity in version.entities { ancestor[entity.name] = entity.parentEntity }
        for entity in version.entities {
            seen.removeAll()
            var name: String? = entity.name
            while let current = name {
                guard seen.insert(current).inserted else {
                    throw CoreDataModelError(
                        path: path, reason: .inconsistentModel("entity \(entity.name) inherits from itself"))
                }
                name = ancestor[current]
            }
        }
    }

    /// The relationships `entity` has, its own and those it inherits.
    static func relationships(of entity: CoreDataEntity, in version: CoreDataModelVersion) -> [CoreDataRelationship] {
        var result = entity.relationships
        var parent = entity.parentEntity.flatMap(version.entity(named:))
        var steps = 0
        while let current = parent, steps < version.entities.count {
            result += current.relationships
            parent = current.parentEntity.flatMap(version.entity(named:))
            steps += 1
        }
        return result
    }
}
