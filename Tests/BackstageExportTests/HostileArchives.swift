import BackstageExport
import BackstageTestSupport
import Foundation

/// Archives built by Python's tarfile and zipfile, each breaking one rule of import; the file
/// extension says the format.
enum HostileArchive: String, CaseIterable, CustomStringConvertible {
    case absolutePath = "absolute.tar"
    case parentComponent = "dotdot.zip"
    case backslash = "backslash.tar"
    case controlCharacter = "control.tar"
    case absoluteLink = "link-absolute.tar"
    case climbingLink = "link-dotdot.tar"
    case linkChain = "link-chain.tar"
    case throughLink = "through-link.tar"
    case hardLinkOutside = "hardlink-outside.tar"
    case hardLinkAbsolute = "hardlink-absolute.tar"
    case fifo = "fifo.tar"
    case device = "device.tar"
    case duplicate = "duplicate.zip"
    case caseCollision = "case.zip"
    case normalizationCollision = "nfd.tar"
    case declaredStore = "sqlite.zip"
    case orphanWAL = "wal.zip"
    case supportFolder = "support.zip"
    case ratioZip = "ratio.zip"
    case ratioTarGz = "ratio.tar.gz"
    case tooManyEntries = "many.zip"
    case tooLarge = "large.tar"
    case manySmallZeros = "zeros-many.tar.gz"
    case sparseHuge = "sparse-huge.tar"
    case sparseRatio = "sparse-ratio.tar"
    case linkThroughDocuments = "link-through-documents.tar"
    case foldedCase = "sigma.zip"
    case sharpS = "strasse.zip"
    // The index of names holds hashes, not paths: collisions found however far apart, in any order.
    case nestedCase = "nested-case.tar"
    case folderCase = "folder-case.tar"
    case linkCase = "link-case.tar"
    case lateDuplicate = "late-duplicate.tar"
    case parentIsFileLater = "parent-file.tar"
    case hardLinkToFolder = "hardlink-folder.tar"

    var description: String { rawValue }

    /// The rule the archive breaks.
    var expected: ImportError.Reason {
        switch self {
        case .absolutePath: .absolutePath
        case .parentComponent: .parentComponent
        case .backslash: .backslash
        case .controlCharacter: .controlCharacter
        case .absoluteLink: .linkOutside(target: "/etc")
        case .climbingLink: .linkOutside(target: "../../outside")
        case .linkChain: .linkOutside(target: "sub/b/..")
        case .throughLink: .throughLink("d")
        case .hardLinkOutside: .hardLinkTarget("../../etc/passwd")
        case .hardLinkAbsolute: .hardLinkTarget("/etc/passwd")
        case .fifo: .specialFile("FIFO")
        case .device: .specialFile("character device")
        case .duplicate: .duplicate
        case .caseCollision: .caseCollision(with: "Readme.txt")
        // libarchive hands every name over in NFC, so an NFC/NFD pair inside one archive arrives as one
        // name twice (a collision with a name already in Documents is reported as such: see ImportTests).
        case .normalizationCollision: .duplicate
        case .declaredStore: .internalFile(.database)
        case .orphanWAL: .internalFile(.orphanSidecar)
        case .supportFolder: .internalFile(.coreDataSupport)
        // One entry of zeros: the entry's ratio or the archive's, whichever is seen first.
        case .ratioZip, .ratioTarGz: .compressionRatio(limit: 100)
        case .tooManyEntries: .tooManyEntries(limit: 20)
        case .tooLarge: .tooLarge(limit: 1 << 20)
        case .manySmallZeros: .archiveCompressionRatio(limit: 100)
        // 1 TiB in a 10 KB tar: more than any disk here has free, refused before a byte is written.
        case .sparseHuge: .exceedsFreeSpace(available: 0)
        case .sparseRatio: .compressionRatio(limit: 100)
        case .linkThroughDocuments: .linkOutside(target: "ext/secret.txt")
        case .foldedCase: .caseCollision(with: "σοφία.txt")
        case .sharpS: .caseCollision(with: "Straße.txt")
        case .nestedCase: .caseCollision(with: "dir/A.txt")
        case .folderCase: .caseCollision(with: "a")
        case .linkCase: .caseCollision(with: "Link")
        case .lateDuplicate: .duplicate
        case .parentIsFileLater: .parentIsFile("a/b")
        case .hardLinkToFolder: .hardLinkTarget("dir")
        }
    }

    /// Limits the archive is imported with (the bombs by count and size are tested against small ones).
    var limits: ImportLimits {
        switch self {
        case .tooManyEntries: ImportLimits(maxEntries: 20)
        case .tooLarge: ImportLimits(maxTotalBytes: 1 << 20)
        case .sparseRatio: ImportLimits(maxTotalBytes: 1 << 50)
        default: ImportLimits()
        }
    }

    /// Sets up Documents (and beside it) for the cases that depend on what is already there.
    func prepare(_ app: TestContainer) throws {
        if self == .linkThroughDocuments {
            // A link the user made, leading out of Documents: an archive's link may not go through it.
            let outside = app.root.appending(path: "outside")
            try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
            try Data("private".utf8).write(to: outside.appending(path: "secret.txt"))
            try FileManager.default.createSymbolicLink(atPath: app.documents.appending(path: "ext").path, withDestinationPath: outside.path)
        }
    }

    func write(in folder: URL) throws -> URL {
        let url = folder.appending(path: rawValue)
        let script = #"""
            import sys, tarfile, zipfile, io, unicodedata, warnings
            warnings.simplefilter("ignore")
            kind, out = sys.argv[1], sys.argv[2]
            def info(name, kind=tarfile.REGTYPE, mode=0o644, link=""):
                i = tarfile.TarInfo(name); i.type = kind; i.mode = mode; i.mtime = 1700000000; i.linkname = link
                return i
            def tar(members, mode="w"):
                with tarfile.open(out, mode, format=tarfile.PAX_FORMAT) as t:
                    for i, data in members:
                        if data is None:
                            t.addfile(i)
                        else:
                            i.size = len(data); t.addfile(i, io.BytesIO(data))
            def f(name, data=b"x", mode=0o644): return (info(name, mode=mode), data)
            def d(name): return (info(name, tarfile.DIRTYPE, 0o755), None)
            def l(name, target): return (info(name, tarfile.SYMTYPE, 0o777, target), None)
            def h(name, target): return (info(name, tarfile.LNKTYPE, 0o644, target), None)
            def zip_(entries):
                with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
                    for name, data in entries: z.writestr(name, data)
            ok = ("ok.txt", b"fine")
            zeros = bytes(64 << 20)
            if kind == "absolute.tar": tar([f("ok.txt"), f("/tmp/backstage-evil.txt")])
            elif kind == "dotdot.zip": zip_([ok, ("../evil.txt", b"x")])
            elif kind == "backslash.tar": tar([f("ok.txt"), f("..\\evil.txt")])
            elif kind == "control.tar": tar([f("ok.txt"), f("bad\nname.txt")])
            elif kind == "link-absolute.tar": tar([f("ok.txt"), l("etc", "/etc")])
            elif kind == "link-dotdot.tar": tar([f("ok.txt"), l("up", "../../outside")])
            elif kind == "link-chain.tar": tar([d("sub"), l("sub/b", ".."), l("a", "sub/b/..")])
            elif kind == "through-link.tar": tar([d("sub"), l("d", "sub"), f("d/evil.txt")])
            elif kind == "hardlink-outside.tar": tar([f("ok.txt"), h("pw", "../../etc/passwd")])
            elif kind == "hardlink-absolute.tar": tar([f("ok.txt"), h("pw", "/etc/passwd")])
            elif kind == "fifo.tar": tar([f("ok.txt"), (info("pipe", tarfile.FIFOTYPE), None)])
            elif kind == "device.tar":
                i = info("null", tarfile.CHRTYPE); i.devmajor, i.devminor = 1, 3
                tar([f("ok.txt"), (i, None)])
            elif kind == "duplicate.zip": zip_([ok, ("a.txt", b"1"), ("a.txt", b"2")])
            elif kind == "case.zip": zip_([("Readme.txt", b"1"), ("README.txt", b"2")])
            elif kind == "nfd.tar": tar([f(unicodedata.normalize("NFC", "Caf\u00e9.txt")), f(unicodedata.normalize("NFD", "Caf\u00e9.txt"))])
            elif kind == "sqlite.zip": zip_([ok, ("Notes.sqlite", b"SQLite format 3\0" + bytes(4080))])
            elif kind == "wal.zip": zip_([ok, ("Notes.sqlite-wal", bytes.fromhex("377f0682002de218") + bytes(24))])
            elif kind == "support.zip": zip_([ok, (".Notes_SUPPORT/_EXTERNAL_DATA/blob", b"x")])
            elif kind == "ratio.zip": zip_([ok, ("zeros.bin", zeros)])
            elif kind == "ratio.tar.gz": tar([f("ok.txt"), f("zeros.bin", zeros)], "w:gz")
            elif kind == "many.zip": zip_([("f%03d.txt" % n, b"x") for n in range(50)])
            elif kind == "large.tar": tar([f("ok.txt"), f("big.bin", bytes(range(256)) * 12288)])
            elif kind == "zeros-many.tar.gz": tar([f("zeros-%04d.bin" % n, bytes(1 << 20)) for n in range(300)], "w:gz")
            elif kind in ("sparse-huge.tar", "sparse-ratio.tar"):
                import subprocess, os, tempfile
                work = tempfile.mkdtemp()
                with open(os.path.join(work, "disk.img"), "wb") as img:
                    img.write(b"boot"); img.truncate((1 << 40) if kind == "sparse-huge.tar" else (4 << 30))
                subprocess.run(["tar", "--sparse", "-cf", out, "-C", work, "disk.img"], check=True)
            elif kind == "link-through-documents.tar": tar([f("ok.txt"), l("peek", "ext/secret.txt")])
            elif kind == "sigma.zip": zip_([("σοφία.txt", b"1"), ("ςοφία.txt", b"2")])
            elif kind == "strasse.zip": zip_([("Straße.txt", b"1"), ("STRASSE.txt", b"2")])
            elif kind == "nested-case.tar": tar([f("dir/A.txt"), f("other/x.txt"), f("dir/B.txt"), f("dir/a.txt")])
            elif kind == "folder-case.tar": tar([f("a/b/c.txt"), f("a/b/d.txt"), f("z.txt"), f("A/b/e.txt")])
            elif kind == "link-case.tar": tar([d("sub"), l("Link", "sub"), f("ok.txt"), f("link")])
            elif kind == "late-duplicate.tar": tar([f("x/1"), f("y/2"), f("x/3"), f("x/1")])
            elif kind == "parent-file.tar": tar([f("a/b"), f("a/c"), f("a/b/c")])
            elif kind == "hardlink-folder.tar": tar([d("dir"), f("dir/f"), h("h", "dir")])
            else: raise SystemExit("unknown kind " + kind)
            """#
        let result = try PythonSQLite.run(script, [rawValue, url.path])
        guard result.status == 0 else { throw Failure("building \(rawValue): \(result.stderr)") }
        return url
    }
}

/// Archives whose bytes were damaged after they were written: libarchive alone reads each
/// without an error (a zip CRC mismatch is only a warning; a gzip trailer is never checked).
enum DamagedArchive: String, CaseIterable, CustomStringConvertible {
    case zipCRC = "crc.zip"
    case gzipCRC = "crc.tar.gz"
    case gzipLength = "length.tar.gz"
    case gzipTruncated = "cut.tar.gz"
    case secondGzipMember = "members.tar.gz"

    var description: String { rawValue }

    var messagePrefix: String {
        switch self {
        case .zipCRC: "the archive is corrupt"
        case .gzipCRC, .gzipLength, .secondGzipMember: "the archive is corrupt: its gzip checksum"
        case .gzipTruncated: "the archive is truncated"
        }
    }

    func write(in folder: URL) throws -> URL {
        let url = folder.appending(path: rawValue)
        let script = #"""
            import sys, tarfile, zipfile, io, gzip, struct
            kind, out = sys.argv[1], sys.argv[2]
            text = b"the user's words, every byte of them\n" * 200
            def targz(members):
                raw = io.BytesIO()
                with tarfile.open(fileobj=raw, mode="w") as t:
                    for name, data in members:
                        i = tarfile.TarInfo(name); i.size = len(data); i.mtime = 1700000000
                        t.addfile(i, io.BytesIO(data))
                return raw.getvalue()
            if kind == "crc.zip":
                with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z: z.writestr("notes.txt", text)
                data = bytearray(open(out, "rb").read()); i = data.index(b"the user's"); data[i] ^= 0x20
                open(out, "wb").write(data)
            else:
                tar = targz([("notes.txt", text)])
                blob = bytearray(gzip.compress(tar, mtime=0))
                if kind == "crc.tar.gz": blob[-8] ^= 0x01
                elif kind == "length.tar.gz": blob[-4] ^= 0x01
                elif kind == "cut.tar.gz": blob = blob[:-6]
                elif kind == "members.tar.gz":
                    # A first member intact, a second whose CRC is wrong: every member is checked.
                    second = bytearray(gzip.compress(bytes(1024), mtime=0)); second[-8] ^= 0x01
                    blob = bytearray(gzip.compress(tar[:-1024], mtime=0)) + second
                open(out, "wb").write(blob)
            """#
        let result = try PythonSQLite.run(script, [rawValue, url.path])
        guard result.status == 0 else { throw Failure("building \(rawValue): \(result.stderr)") }
        return url
    }
}

/// Every path under `root` (folders, links with their text, files with their size and bytes),
/// without following links: what must not change when an import is refused.
func tree(_ root: URL, excluding excluded: Set<String> = []) -> [String: String] {
    var result: [String: String] = [:]
    let fileManager = FileManager.default
    guard let enumerator = fileManager.enumerator(atPath: root.path) else { return result }
    while let relative = enumerator.nextObject() as? String {
        if excluded.contains(where: { relative == $0 || relative.hasPrefix($0 + "/") }) { continue }
        let full = root.appending(path: relative).path
        guard let attributes = try? fileManager.attributesOfItem(atPath: full) else { continue }
        switch attributes[.type] as? FileAttributeType {
        case .typeDirectory?: result[relative] = "folder"
        case .typeSymbolicLink?: result[relative] = "link → " + ((try? fileManager.destinationOfSymbolicLink(atPath: full)) ?? "?")
        default: result[relative] = "file \((try? Data(contentsOf: URL(filePath: full)))?.hashValue ?? 0)"
        }
    }
    return result
}
