// The system layer is part of what an app using Backstage sees (FileSystemError in errors, ByteCount in reports).
@_exported import BackstageSystem
