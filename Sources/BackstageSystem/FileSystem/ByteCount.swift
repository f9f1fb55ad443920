import Foundation

/// The one way sizes are written for people: decimal units, one decimal unless whole
/// (`512 B`, `1.2 MB`, `100 MB`, `1 GB`), as file managers do.
package func formatBytes(_ bytes: Int64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"]
    var value = Double(bytes)
    var unit = 0
    while abs(value) >= 1000 && unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    if unit == 0 { return "\(bytes) B" }
    let text = String(format: "%.1f", value)
    return (text.hasSuffix(".0") ? String(text.dropLast(2)) : text) + " " + units[unit]
}
