import GatewayFoundation
import Testing

@testable import HTTPServer

@Suite struct HTTP2StreamStateTests {
    typealias State = HTTP2StreamState

    static let trailers = HeaderBlock([("grpc-status", "0")])

    /// Which case a state is, for comparisons (the payloads hold a queue and a class).
    enum Phase: Equatable { case open, halfClosedRemote, halfClosedLocal, closing, closed }

    static func phase(_ state: State) -> Phase {
        switch state {
        case .open: .open
        case .halfClosedRemote: .halfClosedRemote
        case .halfClosedLocal: .halfClosedLocal
        case .closing: .closing
        case .closed: .closed
        }
    }

    /// The frame nghttp2's data source gets, with the bytes copied into the buffer (none for NO_COPY frames).
    static func frame(_ state: inout State, capacity: Int = 16_384, noCopyThreshold: Int = 2048) -> (
        State.Frame, [UInt8]
    ) {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let frame = buffer.withUnsafeMutableBytes {
            state.nextFrame(capacity: capacity, noCopyThreshold: noCopyThreshold, into: $0.baseAddress!)
        }
        switch frame {
        case .data(let count, false, _), .last(let count, false, _): return (frame, Array(buffer[..<count]))
        default: return (frame, [])
        }
    }

    /// A state with its head sent, after `requestEnded` when `remoteEnded`.
    static func responding(remoteEnded: Bool = false) -> State {
        var state = State()
        if remoteEnded { _ = state.requestEnded() }
        _ = state.respond(endStream: false)
        return state
    }

    // MARK: Transitions

    @Test func aNewStreamIsOpenWithNothingSent() {
        let state = State()
        #expect(Self.phase(state) == .open)
        #expect(!state.hasResponded && !state.responseEnded && !state.isClosed)
        #expect(state.bufferedBytes == 0)
    }

    @Test func theRequestsEndHalfClosesTheRemoteSide() {
        var state = State()
        #expect(state.requestEnded() == nil)
        #expect(Self.phase(state) == .halfClosedRemote)
        #expect(!state.hasResponded)
    }

    @Test func aHeadWithoutEndStreamKeepsTheStateAndMarksTheResponse() {
        var open = State()
        #expect(open.respond(endStream: false) == nil)
        #expect(Self.phase(open) == .open && open.hasResponded && !open.responseEnded)

        var remoteEnded = State()
        _ = remoteEnded.requestEnded()
        #expect(remoteEnded.respond(endStream: false) == nil)
        #expect(Self.phase(remoteEnded) == .halfClosedRemote && remoteEnded.hasResponded)
    }

    @Test func aHeadWithEndStreamEndsTheResponse() {
        var open = State()
        #expect(open.respond(endStream: true) == nil)
        #expect(Self.phase(open) == .halfClosedLocal && open.responseEnded)

        var remoteEnded = State()
        _ = remoteEnded.requestEnded()
        #expect(remoteEnded.respond(endStream: true) == nil)
        #expect(Self.phase(remoteEnded) == .closing)
    }

    @Test func finishHalfClosesTheLocalSideOrClosesBoth() {
        var open = Self.responding()
        #expect(open.finish(trailers: Self.trailers) == .success(.flush))
        #expect(Self.phase(open) == .halfClosedLocal)

        var remoteEnded = Self.responding(remoteEnded: true)
        #expect(remoteEnded.finish(trailers: nil) == .success(.flush))
        #expect(Self.phase(remoteEnded) == .closing)
    }

    @Test func theRequestsEndAfterTheResponsesLeavesBothEnded() {
        var state = Self.responding()
        _ = state.finish(trailers: nil)
        #expect(state.requestEnded() == nil)
        #expect(Self.phase(state) == .closing)
    }

    @Test func closeEndsEveryStateAndDropsWhatWasQueued() {
        var states = [State(), Self.responding(), Self.responding(remoteEnded: true)]
        var halfClosedLocal = Self.responding()
        _ = halfClosedLocal.write([1, 2, 3])
        _ = halfClosedLocal.finish(trailers: nil)
        var closing = halfClosedLocal
        _ = closing.requestEnded()
        states += [halfClosedLocal, closing]
        for var state in states {
            #expect(state.close() == nil)
            #expect(state.isClosed && state.bufferedBytes == 0 && Self.phase(state) == .closed)
        }
    }

    // MARK: Illegal transitions are answered, not trapped

    @Test func aSecondHeadIsRefused() {
        var state = Self.responding()
        #expect(state.respond(endStream: true) == .alreadyResponded)
        #expect(Self.phase(state) == .open && !state.responseEnded)

        var ended = State()
        _ = ended.respond(endStream: true)
        #expect(ended.respond(endStream: false) == .alreadyResponded)
        #expect(Self.phase(ended) == .halfClosedLocal)
    }

    @Test func bodyOrEndBeforeTheHeadIsRefused() {
        for remoteEnded in [false, true] {
            var state = State()
            if remoteEnded { _ = state.requestEnded() }
            #expect(state.write([1]) == .failure(.noResponseHead))
            #expect(state.write(appending: { $0.append(1) }) == .failure(.noResponseHead))
            #expect(state.finish(trailers: nil) == .failure(.noResponseHead))
            #expect(state.bufferedBytes == 0 && !state.hasResponded)
            #expect(Self.phase(state) == (remoteEnded ? .halfClosedRemote : .open))
        }
    }

    @Test func bodyOrEndAfterTheEndIsRefused() {
        var state = Self.responding()
        _ = state.write([1, 2])
        _ = state.finish(trailers: nil)
        #expect(state.write([3]) == .failure(.responseEnded))
        #expect(state.finish(trailers: Self.trailers) == .failure(.responseEnded))
        #expect(state.bufferedBytes == 2)
        _ = state.requestEnded()
        #expect(state.write(appending: { $0.append(3) }) == .failure(.responseEnded))
        #expect(Self.phase(state) == .closing)
    }

    @Test func theRequestsEndTwiceIsRefused() {
        var remoteEnded = State()
        _ = remoteEnded.requestEnded()
        #expect(remoteEnded.requestEnded() == .requestEnded)
        #expect(Self.phase(remoteEnded) == .halfClosedRemote)

        var closing = State()
        _ = closing.respond(endStream: true)
        _ = closing.requestEnded()
        #expect(closing.requestEnded() == .requestEnded)
        #expect(Self.phase(closing) == .closing)
    }

    @Test func everythingAfterTheCloseIsRefused() {
        var state = Self.responding()
        _ = state.close()
        #expect(state.close() == .closed)
        #expect(state.respond(endStream: false) == .closed)
        #expect(state.write([1]) == .failure(.closed))
        #expect(state.finish(trailers: nil) == .failure(.closed))
        #expect(state.requestEnded() == .closed)
        var outbound = ByteQueue()
        #expect(!state.moveBody(1, to: &outbound))
        #expect(state.moveBody(0, to: &outbound))
        let (frame, _) = Self.frame(&state)
        guard case .refused(.closed) = frame else {
            Issue.record("a closed stream's data source answered \(frame)")
            return
        }
        #expect(state.isClosed && state.hasResponded && state.responseEnded)
    }

    @Test func theDataSourceOfAStreamWithoutHeadIsRefused() {
        var state = State()
        let (frame, _) = Self.frame(&state)
        guard case .refused(.noResponseHead) = frame else {
            Issue.record("answered \(frame)")
            return
        }
        #expect(Self.phase(state) == .open)
    }

    // MARK: The pending sends and nghttp2's data source

    @Test func smallFramesAreCopiedAndTheLastCarriesTheTrailers() {
        var state = Self.responding(remoteEnded: true)
        _ = state.write([1, 2, 3])
        _ = state.write(appending: { $0 += [4, 5] })
        #expect(state.bufferedBytes == 5)

        let (first, bytes) = Self.frame(&state, capacity: 2)
        guard case .data(count: 2, noCopy: false, drainedFrom: 5) = first else {
            Issue.record("first frame \(first)")
            return
        }
        #expect(bytes == [1, 2] && state.bufferedBytes == 3)

        _ = state.finish(trailers: Self.trailers)
        let (last, rest) = Self.frame(&state)
        guard case .last(count: 3, noCopy: false, let trailers) = last else {
            Issue.record("last frame \(last)")
            return
        }
        #expect(trailers === Self.trailers && rest == [3, 4, 5] && state.bufferedBytes == 0)
        #expect(Self.phase(state) == .closing)
    }

    @Test func anEmptyQueueParksTheDataSourceAndTheNextWriteResumesIt() {
        var state = Self.responding()
        let (frame, _) = Self.frame(&state)
        guard case .deferred = frame else {
            Issue.record("answered \(frame)")
            return
        }
        #expect(state.write([7]) == .success(.resumeAndFlush))
        #expect(state.write([8]) == .success(.flush))

        _ = Self.frame(&state)
        _ = Self.frame(&state)  // parks again
        #expect(state.finish(trailers: nil) == .success(.resumeAndFlush))
        let (last, _) = Self.frame(&state)
        guard case .last(count: 0, noCopy: false, nil) = last else {
            Issue.record("answered \(last)")
            return
        }
    }

    @Test func largeFramesAreOnlySizedAndMovedWhenSent() {
        var state = Self.responding()
        let body = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
        _ = state.write(body)
        _ = state.finish(trailers: nil)

        let (first, copied) = Self.frame(&state, capacity: 4096)
        guard case .data(count: 4096, noCopy: true, drainedFrom: 5000) = first else {
            Issue.record("first frame \(first)")
            return
        }
        #expect(copied.isEmpty && state.bufferedBytes == 5000)
        var outbound = ByteQueue()
        #expect(!state.moveBody(5001, to: &outbound))
        #expect(state.moveBody(4096, to: &outbound))
        #expect(outbound.count == 4096 && state.bufferedBytes == 904)

        let (last, rest) = Self.frame(&state, capacity: 4096)
        guard case .last(count: 904, noCopy: false, nil) = last else {
            Issue.record("last frame \(last)")
            return
        }
        #expect(outbound.copy(offset: 0, count: 4096) + rest == body)
    }

    @Test func aLastFrameAtTheThresholdIsSentWithoutACopy() {
        var state = Self.responding(remoteEnded: true)
        _ = state.write([UInt8](repeating: 9, count: 2048))
        _ = state.finish(trailers: Self.trailers)
        let (last, _) = Self.frame(&state, capacity: 16_384, noCopyThreshold: 2048)
        guard case .last(count: 2048, noCopy: true, .some) = last else {
            Issue.record("answered \(last)")
            return
        }
        var outbound = ByteQueue()
        #expect(state.moveBody(2048, to: &outbound) && state.bufferedBytes == 0)
    }
}
