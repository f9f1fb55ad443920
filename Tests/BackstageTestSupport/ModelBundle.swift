import Foundation

/// A Core Data model bundle as Xcode writes one, written by a test: `Name.xcdatamodeld` holding a
/// `Version.xcdatamodel` folder per model version with its `contents` XML, `.xccurrentversion`
/// when a current version is named; and, beside it, the compiled model's `Name.momd/VersionInfo.plist`
/// when a test gives version hashes.
public enum ModelBundle {
    /// One model version: the `.xcdatamodel` folder's name (without extension) and its `contents`.
    public struct Version: Sendable {
        public var name: String
        public var contents: String

        public init(_ name: String, contents: String) {
            self.name = name
            self.contents = contents
        }
    }

    /// Writes `name.xcdatamodeld` in `folder` with `versions`, and `.xccurrentversion` naming
    /// `current` when given; returns the bundle.
    @discardableResult
    public static func write(
        _ name: String, versions: [Version], current: String? = nil, in folder: URL
    ) throws -> URL {
        let bundle = folder.appending(path: "\(name).xcdatamodeld")
        for version in versions {
            let model = bundle.appending(path: "\(version.name).xcdatamodel")
            try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
            try Data(version.contents.utf8).write(to: model.appending(path: "contents"))
        }
        if let current {
            try Data(
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>\(current).xcdatamodel</string></dict></plist>
                """.utf8
            ).write(to: bundle.appending(path: ".xccurrentversion"))
        }
        return bundle
    }

    /// Versions named as Xcode names them (`name`, `name 2`, `name 3`, …), one per element of
    /// `bodies` (the entities and configurations inside `<model>`), each with its number as its
    /// version identifier when `identifiers` is true.
    public static func numbered(_ name: String, _ bodies: [String], identifiers: Bool = true) -> [Version] {
        bodies.enumerated().map { index, body in
            Version(
                index == 0 ? name : "\(name) \(index + 1)",
                contents: contents(body, identifier: identifiers ? "\(index + 1)" : nil))
        }
    }

    /// A `contents` file: Xcode's `<model>` element around `body`, with `identifier` as its
    /// `userDefinedModelVersionIdentifier` when given.
    public static func contents(_ body: String, identifier: String? = nil) -> String {
        let attribute = identifier.map { #" userDefinedModelVersionIdentifier="\#($0)""# } ?? ""
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0"\(attribute)>
            \(body)
            </model>
            """
    }

    /// Writes `name.momd/VersionInfo.plist` in `folder`, as a build compiles the model: each model
    /// version's entities with a made-up 32-byte version hash, distinct per version and entity.
    /// Returns the `.momd` folder.
    @discardableResult
    public static func writeCompiledModel(
        _ name: String, entities: [(version: String, entities: [String])], in folder: URL
    ) throws -> URL {
        var hashes: [String: [String: Data]] = [:]
        for (index, version) in entities.enumerated() {
            hashes[version.version] = Dictionary(
                uniqueKeysWithValues: version.entities.map {
                    ($0, Data(repeating: UInt8(index * 16 + $0.count), count: 32))
                })
        }
        let momd = folder.appending(path: "\(name).momd")
        try FileManager.default.createDirectory(at: momd, withIntermediateDirectories: true)
        try PropertyListSerialization.data(
            fromPropertyList: ["NSManagedObjectModel_VersionHashes": hashes], format: .xml, options: 0
        ).write(to: momd.appending(path: "VersionInfo.plist"))
        return momd
    }
}
