import AppStoreDomain

/// The paging of one notification stream as a pure state machine (no I/O, no clock): which page to fetch
/// next, which records of an arrived page to emit, and the resume position of each.
///
/// Apple's Get Notification History pages are addressed by the `paginationToken` of the previous answer;
/// the first page by none. A resumed stream refetches the page its token names and skips through the event
/// it names, so it continues with no duplicate and no gap. The environment that answered the first page
/// pins every later page.
struct NotificationPaging: Sendable, Hashable {
    /// What to ask Apple for next.
    struct PageRequest: Sendable, Hashable {
        /// The `paginationToken` query value (nil: the first page).
        var paginationToken: String?
        /// The environment to call (nil: as the app is configured, for the first page).
        var environment: AppleEnvironment?
    }

    /// What Apple answered, as far as paging is concerned.
    struct PageSummary: Sendable, Hashable {
        var count: Int
        var paginationToken: String
        var hasMore: Bool
        var environment: AppleEnvironment
    }

    /// One record to emit: its index in the page and what its resume token must carry.
    struct Emission: Sendable, Hashable {
        var index: Int
        var pageToken: String
        var environment: AppleEnvironment
    }

    /// Why paging stopped.
    enum Ending: Sendable, Hashable {
        /// Apple said no more pages.
        case complete
        /// Apple said more pages follow but sent no token to fetch them (a broken answer).
        case missingToken
    }

    private(set) var next: PageRequest?
    private(set) var ending: Ending?
    private(set) var pagesReceived = 0
    private var skip: Int

    /// A new stream, or one resuming right after the event at `index` of the page fetched with `pageToken`.
    init(resumingAt position: (pageToken: String, index: Int, environment: AppleEnvironment)? = nil) {
        if let position {
            next = PageRequest(
                paginationToken: position.pageToken.isEmpty ? nil : position.pageToken,
                environment: position.environment)
            skip = max(0, position.index + 1)
        } else {
            next = PageRequest(paginationToken: nil, environment: nil)
            skip = 0
        }
    }

    /// The page answering `request` arrived: returns the records to emit, in order, and moves on to the
    /// next page (or the end). Call it once per request, in request order.
    mutating func receive(_ page: PageSummary, for request: PageRequest) -> [Emission] {
        pagesReceived += 1
        let first = min(skip, page.count)
        skip = 0
        let token = request.paginationToken ?? ""
        let emissions = (first..<page.count).map {
            Emission(index: $0, pageToken: token, environment: page.environment)
        }
        if !page.hasMore {
            next = nil
            ending = .complete
        } else if page.paginationToken.isEmpty {
            next = nil
            ending = .missingToken
        } else {
            next = PageRequest(paginationToken: page.paginationToken, environment: page.environment)
        }
        return emissions
    }
}
