import Testing

@testable import GatewayFoundation

@Suite struct ByteQueueTests {
    @Test func bytesComeOutInTheOrderTheyWentInWhateverTheWayIn() {
        var queue = ByteQueue()
        queue.append([1, 2])
        [UInt8]([3, 4]).withUnsafeBytes { queue.append($0) }
        queue.append { $0.append(5) }
        #expect(queue.count == 5 && queue[0] == 1 && queue[4] == 5)
        #expect(queue.copy(offset: 1, count: 3) == [2, 3, 4])
        var out = [UInt8](repeating: 0, count: 3)
        #expect(out.withUnsafeMutableBytes { queue.take(into: $0.baseAddress!, capacity: 3) } == 3)
        #expect(out == [1, 2, 3])
        #expect(queue.withBytes { Array($0) } == [4, 5])
        queue.consume(10)  // more than queued: everything, no trap
        #expect(queue.isEmpty && queue.storedBytes == 0)
    }

    /// An array handed in whole is the queue's storage (no copy) and stays its giver's: draining or growing
    /// the queue never changes the giver's bytes, and the queue works on afterwards.
    @Test func anArrayHandedInWholeStaysItsGiversWhateverTheQueueDoes() {
        let answer: [UInt8] = [0, 0, 0, 0, 2, 8, 1]
        var queue = ByteQueue()
        queue.append(answer)
        var out = [UInt8](repeating: 0, count: 7)
        #expect(out.withUnsafeMutableBytes { queue.take(into: $0.baseAddress!, capacity: 7) } == 7)
        #expect(out == answer && queue.isEmpty && queue.storedBytes == 0)
        queue.append(answer)
        queue.append([9])
        queue.consume(3)
        #expect(queue.withBytes { Array($0) } == [0, 2, 8, 1, 9])
        #expect(answer == [0, 0, 0, 0, 2, 8, 1])
    }

    @Test func movingBytesAppendsThemToTheOtherQueueAndConsumesThemHere() {
        var source = ByteQueue()
        var target = ByteQueue()
        source.append([1, 2, 3, 4])
        target.append([9])
        #expect(source.move(3, to: &target) == 3)
        #expect(source.withBytes { Array($0) } == [4])
        #expect(target.withBytes { Array($0) } == [9, 1, 2, 3])
        #expect(source.move(10, to: &target) == 1 && source.isEmpty)  // more than queued: what there is
        #expect(source.move(-1, to: &target) == 0 && target.count == 5)
    }

    @Test func aPeerThatAlwaysLeavesALittleBehindCannotGrowTheStorage() {
        var queue = ByteQueue()
        let chunk = [UInt8](repeating: 7, count: 10_000)
        for _ in 0..<1_000 {
            queue.append(chunk)
            queue.consume(chunk.count - 1)  // one byte always stays
        }
        #expect(queue.count == 1_000)
        #expect(queue.storedBytes < 200_000, "storage grew to \(queue.storedBytes) bytes")
    }

    @Test func takingMoreThanQueuedOrNothingIsHarmless() {
        var queue = ByteQueue()
        var out = [UInt8](repeating: 0, count: 4)
        #expect(out.withUnsafeMutableBytes { queue.take(into: $0.baseAddress!, capacity: 4) } == 0)
        queue.append([9])
        #expect(out.withUnsafeMutableBytes { queue.take(into: $0.baseAddress!, capacity: -1) } == 0)
        #expect(out.withUnsafeMutableBytes { queue.take(into: $0.baseAddress!, capacity: 4) } == 1)
        #expect(out[0] == 9 && queue.isEmpty)
    }
}
