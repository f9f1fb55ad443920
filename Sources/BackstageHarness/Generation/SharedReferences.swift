import Backstage
import Foundation
import GRDB

extension SchemaGenerator {
    /// The row's references chosen in `order` (``TablePlan/sharingOrder``), each agreeing with
    /// those before it on the columns they share: the shared column chosen once, then for each
    /// other key containing it a tuple of its parent that holds the same value. A row whose keys
    /// find no common tuple is drawn again (8 times at most); then the key that found none is
    /// NULL, which its NOT NULL columns refuse, and the row is left out.
    func chooseSharedReferences(
        _ plan: TablePlan, order: [Int], choices: [Int], row: Int, values: inout [DatabaseValue],
        random: inout SeededRandom
    ) {
        let drawn = values
        for _ in 0..<8 {
            values = drawn
            var chosen: [String: DatabaseValue] = [:]
            var agreed = true
            for group in order {
                let reference = plan.references[group]
                let names = reference.columns.map { $0.lowercased() }
                let parents = reference.count
                var tuple: ArraySlice<DatabaseValue>?, unmatched = false
                if reference.enumerated == nil, !reference.shared.isEmpty {
                    let key = reference.shared.map { chosen[names[$0]] ?? .null }
                    if key.contains(where: \.isNull) {
                        // A NULL in the key matches no row, legitimately: the rest from any parent.
                        tuple = parents > 0 ? reference.tuple(Int(random.next() % UInt64(parents))) : nil
                    } else {
                        let candidates = reference.matching(key)
                        if candidates.isEmpty {
                            (agreed, unmatched) = (false, true)
                        } else {
                            tuple = reference.tuple(candidates[Int(random.next() % UInt64(candidates.count))])
                        }
                    }
                } else {
                    tuple = parentKey(reference, choices: choices, row: row, values: values, random: &random)
                }
                for (position, index) in reference.indices.enumerated() where !reference.shared.contains(position) {
                    let value = tuple.map { $0[$0.startIndex + position] }
                    if index >= 0 {
                        // No parent agrees: NULL, which a NOT NULL column refuses (the row is left
                        // out, never written with a key naming no row).
                        values[index] = value ?? (plan.columns[index].notNull && !unmatched ? values[index] : .null)
                        if value == nil && plan.columns[index].notNull && !unmatched { reference.madeUp = true }
                        chosen[names[position]] = values[index]
                    } else {
                        chosen[names[position]] = value ?? .null
                    }
                }
            }
            if agreed { return }
        }
    }

    /// New parents for the references of a refused row that read `columns` (all when empty): a
    /// trigger's `RAISE` about the parent (a product without stock of its own cannot be stocked),
    /// a `CHECK` comparing two keys (`containing_id != sub_id`). `nulls`: NULL instead, where
    /// allowed. Enumerated references keep their tuple (it is the row's place in the enumeration).
    func redrawReferences(
        _ plan: TablePlan, columns: Set<String>, nulls: Bool, row: Int, values: inout [DatabaseValue],
        random: inout SeededRandom
    ) {
        if let order = plan.sharingOrder {
            guard !nulls else { return }
            let choices = plan.enumeration.isEmpty ? [] : plan.choices(for: row - 1)
            chooseSharedReferences(plan, order: order, choices: choices, row: row, values: &values, random: &random)
            return
        }
        for reference in plan.references where reference.enumerated == nil {
            guard columns.isEmpty || reference.columns.contains(where: { columns.contains($0.lowercased()) }) else {
                continue
            }
            if nulls {
                guard reference.nullable else { continue }
                for index in reference.indices where index >= 0 && !plan.columns[index].notNull {
                    values[index] = .null
                }
                continue
            }
            guard reference.count > 0 else { continue }
            let tuple = reference.tuple(Int(random.next() % UInt64(reference.count)))
            for (position, index) in reference.indices.enumerated() where index >= 0 {
                values[index] = tuple[tuple.startIndex + position]
            }
        }
    }
}
