import Backstage
import CArchive

/// Feeds libarchive the decompressed bytes of a gzip file, checking what libarchive 3.6 does not:
/// the CRC-32 and length in each member's trailer (RFC 1952 §2.3.1), and a stream cut short.
/// libarchive's own gzip filter ignores the trailer, so a flipped bit in a `.tar.gz` would import
/// damaged content with no error. zlib checks both as it inflates, at no extra pass.
final class GzipSource {
    private let file: ReadableFile
    private var stream = z_stream()
    private let input: UnsafeMutableRawBufferPointer
    private let output: UnsafeMutableRawBufferPointer
    private var inputEnd = false
    private var inMember = true
    private var finished = false
    /// Bytes of the gzip file read so far, less those not yet inflated.
    private(set) var compressedBytesConsumed: Int64 = 0
    private var compressedBytesRead: Int64 = 0
    /// Why reading failed, for the error libarchive reports.
    private(set) var failure: String?
    /// The file-system error reading failed with, when it was one (not the bytes).
    private(set) var fileSystemFailure: FileSystemError?

    /// True when the file at `path` starts with the gzip magic number.
    static func isGzip(_ prefix: [UInt8]) -> Bool {
        prefix.count >= 2 && prefix[0] == 0x1f && prefix[1] == 0x8b
    }

    init(file: ReadableFile) throws(ArchiveError) {
        self.file = file
        input = .allocate(byteCount: 1 << 20, alignment: 16)
        output = .allocate(byteCount: 1 << 20, alignment: 16)
        let status = backstage_inflate_init_gzip(&stream)
        guard status == Z_OK else {
            input.deallocate()
            output.deallocate()
            throw ArchiveError(cause: .zlib(code: status), message: "zlib could not start", archivePath: file.path)
        }
    }

    deinit {
        inflateEnd(&stream)
        input.deallocate()
        output.deallocate()
        file.close()
    }

    /// The next block of decompressed bytes, empty at the end; nil on failure (see ``failure``).
    func read() -> UnsafeRawBufferPointer? {
        do {
            return UnsafeRawBufferPointer(rebasing: output[..<(try inflateSome())])
        } catch let error as Failure {
            failure = error.message
        } catch let error as FileSystemError {
            fileSystemFailure = error
            failure = error.description
        } catch {
            failure = "\(error)"
        }
        return nil
    }

    private struct Failure: Error { var message: String }

    private func inflateSome() throws -> Int {
        guard !finished else { return 0 }
        stream.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.avail_out = UInt32(output.count)
        while stream.avail_out == UInt32(output.count) {
            if stream.avail_in < 2 && !inputEnd { try refill() }
            if !inMember {
                // After a member's trailer: another member, or the end (trailing bytes ignored, as gzip does).
                guard stream.avail_in >= 2, stream.next_in[0] == 0x1f, stream.next_in[1] == 0x8b else {
                    finished = true
                    break
                }
                inflateReset(&stream)
                inMember = true
            }
            if stream.avail_in == 0 && inputEnd {
                throw Failure(message: "the archive is truncated: its gzip stream ends early")
            }
            let status = inflate(&stream, Z_NO_FLUSH)
            compressedBytesConsumed = compressedBytesRead - Int64(stream.avail_in)
            switch status {
            case Z_STREAM_END:
                inMember = false
            case Z_OK, Z_BUF_ERROR:
                continue
            case Z_DATA_ERROR:
                let detail = stream.msg.map { String(cString: $0) } ?? "invalid data"
                throw Failure(
                    message: detail.contains("check") || detail.contains("length")
                        ? "the archive is corrupt: its gzip checksum does not match its content (\(detail))"
                        : "the archive is corrupt: \(detail)")
            default:
                throw Failure(message: "zlib failed with code \(status)")
            }
        }
        return output.count - Int(stream.avail_out)
    }

    /// Moves the unread input to the front of the buffer and reads more after it.
    private func refill() throws {
        let pending = Int(stream.avail_in)
        if pending > 0, let next = stream.next_in {
            input.baseAddress!.copyMemory(from: UnsafeRawPointer(next), byteCount: pending)
        }
        let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: input[pending...]))
        if n == 0 { inputEnd = true }
        compressedBytesRead += Int64(n)
        stream.next_in = input.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.avail_in = UInt32(pending + n)
    }
}
