/// An object kept in a `SlotArray`, knowing its index there (-1 while it is in none).
package protocol Slotted: AnyObject {
    var slot: Int { get set }
}

/// Objects in no particular order, each knowing its index: added at the end, removed by moving the last one
/// into the hole. Neither hashes nor searches, which a loop's open streams and live calls, added and removed
/// on every call, need. An object is in at most one `SlotArray` at a time.
/// Inlinable, so a module using it (GRPC's call registry) gets it specialised, not a generic call per use.
package struct SlotArray<Element: Slotted> {
    @usableFromInline var storage: [Element] = []

    @inlinable package init() {}

    /// The objects, in no particular order.
    @inlinable package var elements: [Element] { storage }
    @inlinable package var count: Int { storage.count }
    @inlinable package var isEmpty: Bool { storage.isEmpty }

    /// Adds `element` unless it is in a slot already.
    @inlinable @inline(__always) package mutating func add(_ element: Element) {
        guard element.slot < 0 else { return }
        element.slot = storage.count
        storage.append(element)
    }

    /// Removes `element` if it is here.
    @inlinable @inline(__always) package mutating func remove(_ element: Element) {
        let slot = element.slot
        guard slot >= 0, slot < storage.count, storage[slot] === element else { return }
        let last = storage.removeLast()
        if last !== element {
            storage[slot] = last
            last.slot = slot
        }
        element.slot = -1
    }

    /// Empties the array; returns what it held, each out of its slot.
    @inlinable package mutating func removeAll() -> [Element] {
        let removed = storage
        storage.removeAll()
        for element in removed { element.slot = -1 }
        return removed
    }
}
