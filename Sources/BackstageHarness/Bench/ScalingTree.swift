import Foundation

/// A Documents tree of many small files, written with `open`/`write`/`close` directly (a million
/// files in tens of seconds, where a shell loop takes an hour), and kept between runs: a tree is
/// complete when its marker file exists beside it.
public struct ScalingTree: Sendable {
    /// How the files are spread over folders.
    public enum Shape: String, Codable, CaseIterable, Sendable {
        /// 16 folders of many files each (62,500 a folder at 1,000,000 files).
        case flat
        /// Folders nested 8 levels deep, 4 to a level, 16 or more files in each leaf.
        case deep
    }

    public var shape: Shape
    public var files: Int

    public init(shape: Shape, files: Int) {
        self.shape = shape
        self.files = files
    }

    /// The folder of file `index`, relative to Documents.
    func folder(of index: Int) -> String {
        switch shape {
        case .flat:
            return "Notes \(index % 16)"
        case .deep:
            let perLeaf = max(16, (files + 65_535) / 65_536)
            var leaf = index / perLeaf
            var parts: [String] = []
            for _ in 0..<8 {
                parts.append("d\(leaf % 4)")
                leaf /= 4
            }
            return parts.joined(separator: "/")
        }
    }

    /// The container of the tree under `workspace` (an iOS-style root whose Documents holds the
    /// files), written unless a complete one is there. Its files are 100 to 999 bytes of text.
    public func container(in workspace: URL) throws -> URL {
        let root = workspace.appending(path: "tree-\(shape.rawValue)-\(files)", directoryHint: .isDirectory)
        let marker = workspace.appending(path: "tree-\(shape.rawValue)-\(files).complete")
        if FileManager.default.fileExists(atPath: marker.path) { return root }
        if FileManager.default.fileExists(atPath: root.path) {
            _ = try ChildProcess.run(URL(filePath: "/bin/rm"), ["-rf", root.path])
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try writeFiles(documents: root.appending(path: "Documents").path)
        try Data().write(to: marker)
        return root
    }

    private func writeFiles(documents: String) throws {
        let text = Array(
            String(repeating: "The quick brown fox jumps over the lazy dog, and a note goes on. ", count: 16).utf8)
        try makeFolder(documents)
        var lastFolder = ""
        for index in 0..<files {
            let folder = documents + "/" + self.folder(of: index)
            if folder != lastFolder {
                try makeFolders(folder, below: documents)
                lastFolder = folder
            }
            let path = folder + "/note \(index).txt"
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw failure("creating", path) }
            let count = 100 + (index &* 7_919) % 900
            let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, count) }
            close(descriptor)
            guard written == count else { throw failure("writing", path) }
        }
    }

    private func makeFolders(_ folder: String, below root: String) throws {
        var path = root
        for part in folder.dropFirst(root.count + 1).split(separator: "/") {
            path += "/" + part
            try makeFolder(path)
        }
    }

    private func makeFolder(_ path: String) throws {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw failure("creating the folder", path) }
    }

    private func failure(_ action: String, _ path: String) -> BenchError {
        BenchError(message: "\(action) \(path) failed: \(String(cString: strerror(errno)))")
    }
}
