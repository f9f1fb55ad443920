import BackstageModel
// The layers below are part of what an app using Backstage sees: FileSystemError and ByteCount
// (system), AppContainer, the errors, reports and stores (model).
@_exported import BackstageModel
@_exported import BackstageSystem
