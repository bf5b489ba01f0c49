/// An object kept in a `SlotArray`, knowing its index there (-1 while it is in none).
public protocol Slotted: AnyObject {
    var slot: Int { get set }
}

/// Objects in no particular order, each knowing its index: added at the end, removed by moving the last one
/// into the hole. Neither hashes nor searches, which a loop's open streams and live calls, added and removed
/// on every call, need. An object is in at most one `SlotArray` at a time.
/// Inlinable and public, so a module using it (HTTPServer's streams, GRPC's call registry) gets it specialised,
/// not a generic call per use: Swift does not inline a `package` declaration's body into another module (it
/// serializes inlinable bodies of public ones only, without library evolution), so the hot path's generic
/// helpers across modules are `public` even where `package` would do.
public struct SlotArray<Element: Slotted> {
    @usableFromInline var storage: [Element] = []

    @inlinable public init() {}

    /// The objects, in no particular order.
    @inlinable public var elements: [Element] { storage }
    @inlinable public var count: Int { storage.count }
    @inlinable public var isEmpty: Bool { storage.isEmpty }

    /// Adds `element` unless it is in a slot already.
    @inlinable @inline(__always) public mutating func add(_ element: Element) {
        guard element.slot < 0 else { return }
        element.slot = storage.count
        storage.append(element)
    }

    /// Removes `element` if it is here.
    @inlinable @inline(__always) public mutating func remove(_ element: Element) {
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
    @inlinable public mutating func removeAll() -> [Element] {
        let removed = storage
        storage.removeAll()
        for element in removed { element.slot = -1 }
        return removed
    }
}
