// The layers below are part of what an app using Backstage sees: FileSystemError and ByteCount
// (system), AppContainer, the errors, reports and stores (model), UpgradePlan and its steps (engine).
@_exported import BackstageEngine
@_exported import BackstageModel
@_exported import BackstageSystem
