extension LongLinkError {
    /// The error for a non-OK status a server returned. Package API: the wire's `Status` is not part
    /// of the error's public face, which is ``Code-swift.struct/init(status:)`` and ``isRemote``.
    package init(status: Frame.Status, file: String = #fileID, line: Int = #line) {
        let outcomeUnknown = status.code == .unknown && status.detail == Frame.Status.outcomeUnknownDetail
        self.init(
            code: outcomeUnknown ? .outcomeUnknown : Code(status: status.code), message: status.message,
            isRemote: true, file: file, line: line)
    }
}
