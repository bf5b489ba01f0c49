import Testing

@testable import EventLoops

@Suite struct SlotArrayTests {
    final class Item: Slotted {
        let name: String
        var slot = -1
        init(_ name: String) { self.name = name }
    }

    @Test func removingMovesTheLastIntoTheHoleAndEveryItemKeepsKnowingItsSlot() {
        var array = SlotArray<Item>()
        let items = ["a", "b", "c", "d"].map(Item.init)
        for item in items { array.add(item) }
        array.add(items[1])  // already in: nothing changes
        #expect(array.elements.map(\.name) == ["a", "b", "c", "d"])
        array.remove(items[1])
        #expect(array.elements.map(\.name) == ["a", "d", "c"])
        #expect(items[1].slot == -1)
        #expect(array.elements.enumerated().allSatisfy { $0.element.slot == $0.offset })
        array.remove(items[1])  // not there any more: harmless
        array.remove(items[2])  // the last one
        #expect(array.elements.map(\.name) == ["a", "d"] && array.count == 2)
    }

    @Test func anItemOfAnotherArrayIsNotRemovedByMistake() {
        var first = SlotArray<Item>()
        var second = SlotArray<Item>()
        let a = Item("a")
        let b = Item("b")
        first.add(a)
        second.add(b)  // slot 0 in the other array
        first.remove(b)
        #expect(first.elements.map(\.name) == ["a"] && b.slot == 0)
    }

    @Test func removingAllHandsEveryItemBackOutOfItsSlot() {
        var array = SlotArray<Item>()
        let items = ["a", "b"].map(Item.init)
        for item in items { array.add(item) }
        #expect(array.removeAll().map(\.name) == ["a", "b"])
        #expect(array.isEmpty && items.allSatisfy { $0.slot == -1 })
    }
}
