import LongLinkWire

extension Frame.Response {
    /// The payload as UTF-8 text.
    package var text: String { String(decoding: payload, as: UTF8.self) }
}

extension Frame.Push {
    /// The payload as UTF-8 text.
    package var text: String { String(decoding: payload, as: UTF8.self) }
}
